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
 *   close                                             → close:ok (every client closed)
 *   and, unasked: lost {target, code} when a client is closed by the server.
 * It exits when the parent closes the IPC channel.
 *
 * Post content starts with `bench:RRRR:SSSSSS:TTTTTTTTTTTTTTTT:` — run, sequence
 * number and publish time in whole microseconds since the epoch
 * (performance.timeOrigin + performance.now(), comparable across processes of
 * one machine). The hot path reads those digits straight from the frame bytes.
 */
import { now, timedFields } from './lib/clock.mjs';
import { digits } from './lib/frames.mjs';
import { answerRequests, closeSockets, inLanes, openSubscriber } from './lib/worker.mjs';

const MARK = Buffer.from('bench:');
const { runAt: RUN_AT, seqAt: SEQ_AT, timeAt: TIME_AT } = timedFields(MARK);
const CONNECT_CONCURRENCY = 50;

/** Per target server: its clients and the measurement of the current run. */
const groups = new Map();

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
  process.send({
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
    process.send({ type: 'captured', target: group.target, frame: data.toString('utf8') });
  }
  if (++state.perSeq[seq] === group.sockets.length) process.send({ type: 'delivered', target: group.target, run, seq });
}

async function connect({ target, url, headers, subscribe, count }) {
  const group = { target, sockets: new Array(count), state: undefined, closed: 0, closing: false };
  groups.set(target, group);
  await inLanes(count, CONNECT_CONCURRENCY, async (index) => {
    group.sockets[index] = await openSubscriber(group, { url, headers, subscribe }, (data) =>
      onPost(group, index, data),
    );
  });
}

answerRequests(
  {
    connect,
    arm: ({ target, run, posts, capture }) => newRun(groups.get(target), run, posts, capture === true),
    close: async () => {
      for (const group of groups.values()) group.closing = true;
      await Promise.all([...groups.values()].map((group) => closeSockets(group.sockets)));
    },
  },
  { collect: ({ target }) => report(groups.get(target)) },
);
