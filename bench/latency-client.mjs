/**
 * A subscriber process of bench/latency (started with child_process.fork and
 * `serialization: 'advanced'`). It holds many WebSocket clients per target
 * server, each subscribed to one stream, and records what they receive; the
 * parent drives it over IPC:
 *
 *   connect    {target, url, subscribers: [{key, streamId, stream}]} → connected
 *              (stream: the stream's index, which the post header names)
 *   arm        {target, run, posts, streams}  → armed (posts: the most the run may publish)
 *   collect    {target, run, published}       → report, once every client has
 *              every post of its stream, or after `settleMs` with nothing new
 *   disconnect {target}                        → all of that target's clients closed
 *   close                                      → closed, then exit
 *   and, unasked: lost {target, code} when a client is closed by the server.
 *
 * Post content starts with `lat:RRRR:GGGGGG:TTTTTTTTTTTTTTTT:` — run, global
 * sequence number (post g goes to stream g % streams) and the publish time
 * in whole microseconds since the epoch (performance.timeOrigin +
 * performance.now(), comparable across processes of one machine). The hot
 * path reads those digits straight from the frame bytes.
 */
import { WebSocket } from 'ws';

const MARK = Buffer.from('lat:');
const RUN_AT = MARK.length;
const SEQ_AT = RUN_AT + 5;
const TIME_AT = SEQ_AT + 7;
const CONNECT_CONCURRENCY = 50;
const CLOSE_DEADLINE_MS = 3_000;

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

function newRun(group, run, posts, streams) {
  const perStream = Math.ceil(posts / streams);
  const count = group.sockets.length;
  group.state = {
    run,
    posts,
    streams,
    perStream,
    received: new Uint8Array(count * perStream),
    // Milliseconds; float32 keeps microseconds up to 16 s and halves the memory.
    latencies: new Float32Array(count * perStream),
    distinct: 0,
    duplicates: 0,
    stale: 0,
    misrouted: 0,
    lastAt: 0,
    /** The slowest delivery: its latency and when its post was sent (epoch ms). */
    maxMs: 0,
    maxSentAt: 0,
    /** Set by collect: how many deliveries complete the run, and what to do then. */
    expected: Infinity,
    onComplete: undefined,
  };
}

/** Deliveries due to this process's clients when `published` posts went out round-robin. */
function expectedDeliveries(group, published, streams) {
  let expected = 0;
  for (const { stream } of group.subscribers) expected += Math.floor(published / streams) + (stream < published % streams ? 1 : 0);
  return expected;
}

function onPost(group, index, data) {
  const at = now();
  const state = group.state;
  const mark = data.indexOf(MARK);
  if (mark < 0 || !state) return;
  if (digits(data, mark + RUN_AT, 4) !== state.run) {
    state.stale += 1;
    return;
  }
  const seq = digits(data, mark + SEQ_AT, 6);
  if (seq >= state.posts || seq % state.streams !== group.subscribers[index].stream) {
    state.misrouted += 1;
    return;
  }
  const slot = index * state.perStream + Math.floor(seq / state.streams);
  if (state.received[slot] === 1) {
    state.duplicates += 1;
    return;
  }
  state.received[slot] = 1;
  const sentAt = digits(data, mark + TIME_AT, 16) / 1000;
  const latency = at - sentAt;
  state.latencies[state.distinct++] = latency;
  if (latency > state.maxMs) {
    state.maxMs = latency;
    state.maxSentAt = sentAt;
  }
  state.lastAt = at;
  if (state.distinct === state.expected) state.onComplete?.();
}

function collect({ target, run, published }, reply) {
  const group = groups.get(target);
  const state = group?.state;
  if (!state || state.run !== run) throw new Error(`${target} is not armed for run ${run}`);
  state.expected = expectedDeliveries(group, published, state.streams);
  let timer;
  const report = () => {
    clearInterval(timer);
    state.onComplete = undefined;
    reply({
      run,
      expected: state.expected,
      distinct: state.distinct,
      duplicates: state.duplicates,
      stale: state.stale,
      misrouted: state.misrouted,
      lastAt: state.lastAt,
      maxMs: state.maxMs,
      maxSentAt: state.maxSentAt,
      closed: group.closed,
      latencies: state.latencies.slice(0, state.distinct),
    });
  };
  if (state.distinct >= state.expected) {
    report();
    return;
  }
  state.onComplete = report;
  // Posts still on their way keep the run open; `settleMs` of silence ends it.
  let seen = state.distinct;
  let quietSince = performance.now();
  timer = setInterval(() => {
    if (state.distinct !== seen) {
      seen = state.distinct;
      quietSince = performance.now();
    } else if (performance.now() - quietSince >= group.settleMs) {
      report();
    }
  }, 100);
}

/** Opens one client and resolves once it is connected and subscribed. */
function openClient(group, index, url) {
  const { key, streamId } = group.subscribers[index];
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'x-api-key': key }, perMessageDeflate: false, skipUTF8Validation: true });
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
        ws.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: streamId } }));
      } else if (text.includes('"event":"sub_ack"')) {
        ready = true;
        resolve(ws);
      }
    });
  });
}

async function connect({ target, url, subscribers, settleMs }) {
  const group = { target, subscribers, settleMs, sockets: new Array(subscribers.length), state: undefined, closed: 0, closing: false };
  groups.set(target, group);
  let next = 0;
  const lane = async () => {
    while (next < subscribers.length) {
      const index = next++;
      group.sockets[index] = await openClient(group, index, url);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, subscribers.length) }, lane));
}

async function disconnect(group) {
  if (!group) return;
  group.closing = true;
  const closing = [];
  for (const ws of group.sockets) {
    if (!ws || ws.readyState === WebSocket.CLOSED) continue;
    closing.push(new Promise((resolve) => ws.once('close', resolve)));
    ws.close(1000);
  }
  const deadline = new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS));
  await Promise.race([Promise.all(closing), deadline]);
  for (const ws of group.sockets) ws?.terminate();
  groups.delete(group.target);
}

// Without its parent there is no one to report to.
process.once('disconnect', () => process.exit());

process.on('message', (message) => {
  const reply = (extra = {}) => send({ type: `${message.type}:ok`, target: message.target, ...extra });
  const fail = (error) => send({ type: 'error', request: message.type, message: error.message });
  try {
    switch (message.type) {
      case 'connect':
        connect(message).then(() => reply(), fail);
        break;
      case 'arm':
        newRun(groups.get(message.target), message.run, message.posts, message.streams);
        reply();
        break;
      case 'collect':
        collect(message, reply);
        break;
      case 'disconnect':
        disconnect(groups.get(message.target)).then(() => reply(), fail);
        break;
      case 'close':
        Promise.all([...groups.values()].map(disconnect)).then(() => {
          reply();
          process.disconnect();
        }, fail);
        break;
      default:
        fail(new Error(`unknown request ${message.type}`));
    }
  } catch (error) {
    fail(error);
  }
});
