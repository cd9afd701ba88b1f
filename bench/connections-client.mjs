/**
 * A client process of bench/connections (started with child_process.fork
 * through /bin/sh, which raises its open-file limit first). It opens idle
 * subscribers to one server and holds them; the parent drives it over IPC:
 *
 *   connect {url, headers, count, first, streams, concurrency, timeoutMs} → connect:ok
 *     Opens `count` WebSockets, at most `concurrency` of them still on their
 *     way at a time. Each waits for `connected`, sends
 *     `{"event":"on-stream-post","data":{"streamIds":ID}}` with ID the stream
 *     `streams[(first + i) % streams.length]`, and is ready at its `sub_ack`
 *     (which must name ID). Nothing is retried: a socket that errors, closes,
 *     hears anything else first or is not ready within `timeoutMs` is a
 *     failure, counted by reason. Replies with the counts, when connecting
 *     started and when the last socket became ready (ms since the epoch,
 *     performance.timeOrigin + performance.now(), comparable across the
 *     processes of one machine), and percentiles of the time each socket took
 *     from `new WebSocket` to its `sub_ack`.
 *   check → check:ok {open, lost, lostCodes}  (ready sockets still open, and those closed since)
 *   close → close:ok                          (closes every socket; ready for the next connect)
 *
 * The process exits when the IPC channel closes.
 */
import { WebSocket } from 'ws';
import { now } from './lib/clock.mjs';
import { answerRequests, closeSockets, inLanes } from './lib/worker.mjs';

/** The sockets of the current run and what became of them. */
let group;

function newGroup() {
  return { sockets: [], lost: 0, lostCodes: {}, closing: false };
}

/** Opens one subscriber; resolves to `{ ws, readyMs }` or `{ failure }` (never rejects). */
function openSubscriber({ url, headers, timeoutMs }, streamId) {
  const subscribe = JSON.stringify({ event: 'on-stream-post', data: { streamIds: streamId } });
  const mine = group;
  return new Promise((resolve) => {
    const startedAt = now();
    let settled = false;
    let ready = false;
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: timeoutMs });
    const fail = (reason) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      resolve({ failure: reason });
    };
    const timer = setTimeout(() => fail(`not ready within ${timeoutMs} ms`), timeoutMs);
    ws.on('error', (error) => fail(`error: ${error.code ?? error.message}`));
    ws.on('close', (code) => {
      if (!settled) fail(`closed (${code}) before its sub_ack`);
      else if (ready && !mine.closing) {
        mine.lost += 1;
        mine.lostCodes[code] = (mine.lostCodes[code] ?? 0) + 1;
      }
    });
    ws.on('message', (data) => {
      if (settled) return;
      const text = data.toString('utf8');
      if (text.includes('"event":"connected"')) {
        ws.send(subscribe);
      } else if (text.includes('"event":"sub_ack"') && text.includes(`"${streamId}"`)) {
        settled = true;
        ready = true;
        clearTimeout(timer);
        resolve({ ws, readyMs: now() - startedAt });
      } else {
        fail(`unexpected frame: ${text.slice(0, 120)}`);
      }
    });
  });
}

function percentiles(values) {
  const sorted = Float64Array.from(values).sort();
  const at = (p) =>
    sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p99: at(99), max: at(100) };
}

async function connect(options) {
  group = newGroup();
  const { count, first, streams, concurrency } = options;
  const readyMs = [];
  const failures = {};
  let failed = 0;
  let lastReadyAt = null;
  const startedAt = now();
  await inLanes(count, concurrency, async (index) => {
    const result = await openSubscriber(options, streams[(first + index) % streams.length]);
    if (result.failure) {
      failed += 1;
      failures[result.failure] = (failures[result.failure] ?? 0) + 1;
      return;
    }
    group.sockets.push(result.ws);
    readyMs.push(result.readyMs);
    lastReadyAt = now();
  });
  return { ready: group.sockets.length, failed, failures, startedAt, lastReadyAt, readyMs: percentiles(readyMs) };
}

function check() {
  if (!group) return { open: 0, lost: 0, lostCodes: {} };
  const open = group.sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length;
  return { open, lost: group.lost, lostCodes: group.lostCodes };
}

async function close() {
  if (!group) return;
  group.closing = true;
  await closeSockets(group.sockets);
  group = undefined;
}

answerRequests({ connect, check, close });
