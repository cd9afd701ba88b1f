/**
 * A subscriber process of bench/latency (started with child_process.fork and
 * `serialization: 'advanced'`). It holds many WebSocket clients per target
 * server, each subscribed to one stream, and records what they receive; the
 * parent drives it over IPC:
 *
 *   connect    {target, url, subscribers: [{key, streamId, stream, url?}]} → connected (a subscriber's url, when given, over the group's)
 *              (stream: the stream's index, which the post header names)
 *   arm        {target, run, posts, streams}  → armed (posts: the most the run may publish)
 *   collect    {target, run, published}       → report, once every client has
 *              every post of its stream, or after `settleMs` with nothing new
 *   disconnect {target}                        → all of that target's clients closed
 *   close                                      → closed
 *   and, unasked: lost {target, code} when a client is closed by the server.
 * It exits when the parent closes the IPC channel.
 *
 * Post content starts with `lat:RRRR:GGGGGG:TTTTTTTTTTTTTTTT:` — run, global
 * sequence number (post g goes to stream g % streams) and the publish time
 * in whole microseconds since the epoch (performance.timeOrigin +
 * performance.now(), comparable across processes of one machine). The hot
 * path reads those digits straight from the frame bytes.
 */
import { now, timedFields } from './lib/clock.mjs';
import { digits } from './lib/frames.mjs';
import { answerRequests, closeSockets, inLanes, openSubscriber } from './lib/worker.mjs';

const MARK = Buffer.from('lat:');
const { runAt: RUN_AT, seqAt: SEQ_AT, timeAt: TIME_AT } = timedFields(MARK);
const CONNECT_CONCURRENCY = 50;

/** Per target server: its clients and the measurement of the current run. */
const groups = new Map();

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
  for (const { stream } of group.subscribers)
    expected += Math.floor(published / streams) + (stream < published % streams ? 1 : 0);
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

/** Resolves to the run's report once every client has every post of its stream, or after `settleMs` with nothing new. */
function collect({ target, run, published }) {
  const group = groups.get(target);
  const state = group?.state;
  if (!state || state.run !== run) throw new Error(`${target} is not armed for run ${run}`);
  state.expected = expectedDeliveries(group, published, state.streams);
  return new Promise((resolve) => {
    let timer;
    const report = () => {
      clearInterval(timer);
      state.onComplete = undefined;
      resolve({
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
  });
}

async function connect({ target, url, subscribers, settleMs }) {
  const group = {
    target,
    subscribers,
    settleMs,
    sockets: new Array(subscribers.length),
    state: undefined,
    closed: 0,
    closing: false,
  };
  groups.set(target, group);
  await inLanes(subscribers.length, CONNECT_CONCURRENCY, async (index) => {
    const { key, streamId } = subscribers[index];
    const subscribe = JSON.stringify({ event: 'on-stream-post', data: { streamIds: streamId } });
    group.sockets[index] = await openSubscriber(
      group,
      { url: subscribers[index].url ?? url, headers: { 'x-api-key': key }, subscribe },
      (data) => onPost(group, index, data),
    );
  });
}

async function disconnect(group) {
  if (!group) return;
  group.closing = true;
  await closeSockets(group.sockets);
  groups.delete(group.target);
}

answerRequests({
  connect,
  arm: ({ target, run, posts, streams }) => newRun(groups.get(target), run, posts, streams),
  collect,
  disconnect: ({ target }) => disconnect(groups.get(target)),
  close: async () => {
    await Promise.all([...groups.values()].map(disconnect));
  },
});
