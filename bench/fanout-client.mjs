/**
 * A subscriber process of bench/fanout (started with child_process.fork and
 * `serialization: 'advanced'`). It holds many WebSocket clients per target
 * server and measures what they receive; the parent drives it over IPC:
 *
 *   connect {target, url, headers, subscribe, count}  → connected
 *   arm     {target, run, posts, capture}             → armed (posts: the most the run may publish)
 *     then, while posts arrive: delivered {target, run, seq} once every client
 *     of this process has post seq
 *   collect {target}                                  → report (what arrived in this run)
 *   close                                             → closed, then exit
 *
 * Post content starts with `bench:RRRR:SSSSSS:TTTTTTTTTTTTTTTT:` — run, sequence
 * number and publish time in whole microseconds since the epoch
 * (performance.timeOrigin + performance.now(), comparable across processes of
 * one machine). The hot path reads those digits straight from the frame bytes.
 */
import { WebSocket } from 'ws';

const MARK = Buffer.from('bench:');
const RUN_AT = MARK.length;
const SEQ_AT = RUN_AT + 5;
const TIME_AT = SEQ_AT + 7;
const CONNECT_CONCURRENCY = 50;

const now = () => performance.timeOrigin + performance.now();

function digits(buffer, start, count) {
  let value = 0;
  for (let i = start; i < start + count; i++) value = value * 10 + (buffer[i] - 48);
  return value;
}

/** Per target server: its clients and the measurement of the current run. */
const groups = new Map();

function send(message) {
  process.send(message);
}

function newRun(group, run, posts, capture) {
  const count = group.sockets.length;
  group.state = {
    run,
    posts,
    received: new Uint8Array(posts * count),
    perSeq: new Uint16Array(posts),
    // Milliseconds; float32 keeps microseconds up to 16 s and halves the memory.
    latencies: new Float32Array(posts * count),
    distinct: 0,
    duplicates: 0,
    stale: 0,
    firstAt: Infinity,
    lastAt: 0,
    capture,
    reported: false,
  };
}

function report(group) {
  const state = group.state;
  if (!state || state.reported) return;
  state.reported = true;
  send({
    type: 'report',
    target: group.target,
    run: state.run,
    distinct: state.distinct,
    duplicates: state.duplicates,
    stale: state.stale,
    firstAt: state.firstAt,
    lastAt: state.lastAt,
    closed: group.closed,
    latencies: state.latencies.slice(0, state.distinct),
  });
}

function onPost(group, index, data) {
  const at = now();
  const state = group.state;
  const mark = data.indexOf(MARK);
  if (mark < 0 || !state) return;
  const run = digits(data, mark + RUN_AT, 4);
  if (run !== state.run) {
    state.stale += 1;
    return;
  }
  const seq = digits(data, mark + SEQ_AT, 6);
  if (seq >= state.posts) return;
  const slot = index * state.posts + seq;
  if (state.received[slot] === 1) {
    state.duplicates += 1;
    return;
  }
  state.received[slot] = 1;
  state.latencies[state.distinct++] = at - digits(data, mark + TIME_AT, 16) / 1000;
  if (at < state.firstAt) state.firstAt = at;
  if (at > state.lastAt) state.lastAt = at;
  if (state.capture) {
    state.capture = false;
    send({ type: 'captured', target: group.target, frame: data.toString('utf8') });
  }
  if (++state.perSeq[seq] === group.sockets.length) send({ type: 'delivered', target: group.target, run, seq });
}

/** Opens one client and resolves once it is ready: connected, and subscribed when asked. */
function openClient(group, index, { url, headers, subscribe }) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, skipUTF8Validation: true });
    let ready = false;
    ws.on('error', (error) => {
      if (!ready) reject(error);
    });
    ws.on('close', (code) => {
      if (!ready) reject(new Error(`closed with ${code} before it was ready`));
      else if (!group.closing) {
        group.closed += 1;
        send({ type: 'lost', target: group.target, code });
      }
    });
    ws.on('message', (data) => {
      if (ready) {
        onPost(group, index, data);
        return;
      }
      const text = data.toString('utf8');
      if (text.includes('"event":"error"')) {
        reject(new Error(`server refused a subscriber: ${text}`));
        ws.terminate();
      } else if (text.includes('"event":"connected"')) {
        if (subscribe) ws.send(subscribe);
        else ready = true;
      } else if (text.includes('"event":"sub_ack"')) {
        ready = true;
      }
      if (ready) resolve(ws);
    });
  });
}

async function connect({ target, url, headers, subscribe, count }) {
  const group = { target, sockets: new Array(count), state: undefined, closed: 0, closing: false };
  groups.set(target, group);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      group.sockets[index] = await openClient(group, index, { url, headers, subscribe });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, count) }, lane));
}

async function close() {
  const closing = [];
  for (const group of groups.values()) {
    group.closing = true;
    for (const ws of group.sockets) {
      if (!ws || ws.readyState === WebSocket.CLOSED) continue;
      closing.push(new Promise((resolve) => ws.once('close', resolve)));
      ws.close(1000);
    }
  }
  const deadline = new Promise((resolve) => setTimeout(resolve, 3_000));
  await Promise.race([Promise.all(closing), deadline]);
  for (const group of groups.values()) for (const ws of group.sockets) ws?.terminate();
}

process.on('message', (message) => {
  const reply = (extra = {}) => send({ type: `${message.type}:ok`, target: message.target, ...extra });
  const fail = (error) => send({ type: 'error', request: message.type, message: error.message });
  switch (message.type) {
    case 'connect':
      connect(message).then(() => reply(), fail);
      break;
    case 'arm': {
      const group = groups.get(message.target);
      newRun(group, message.run, message.posts, message.capture === true);
      reply();
      break;
    }
    case 'collect':
      report(groups.get(message.target));
      break;
    case 'close':
      close().then(() => {
        reply();
        process.disconnect();
      }, fail);
      break;
    default:
      fail(new Error(`unknown request ${message.type}`));
  }
});
