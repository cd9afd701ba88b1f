/**
 * A subscriber process of bench/history (started with child_process.fork and
 * `serialization: 'advanced'`). It holds many WebSocket clients per target
 * server and checks the history each one receives; the parent drives it:
 *
 *   connect    {target, url, subscribers: [{key, subscribe, streams}]} → connect:ok
 *              (every client connected and greeted, nothing subscribed yet)
 *   go         {target, run, perStream, firstSeq}                      → report
 *              (every client sends its subscribe command at once; the report
 *              comes when every client has its whole history, or after
 *              stallMs without a frame)
 *   disconnect {target}                                                → disconnect:ok
 *   close                                                              → close:ok
 * It exits when the parent closes the IPC channel.
 *
 * `streams` are the stream numbers a client subscribes to; post content starts
 * with `bench:SSSSSS:PPPPPP:` (stream number, post number within the stream),
 * read straight from the frame bytes. A client expects posts firstSeq ..
 * firstSeq + perStream - 1 of each of its streams, each once, in order within a
 * stream. Times are performance.timeOrigin + performance.now() (comparable
 * across processes of one machine).
 */
import { now } from './lib/clock.mjs';
import { digits, startsWith } from './lib/frames.mjs';
import { answerRequests, closeSockets, inLanes, openSubscriber } from './lib/worker.mjs';

const MARK = Buffer.from('bench:');
const STREAM_AT = MARK.length;
const SEQ_AT = STREAM_AT + 7;
const CREATED = Buffer.from('{"event":"stream.post.created"');
const ERROR = Buffer.from('{"event":"error"');
const CONNECT_CONCURRENCY = 50;
const STALL_MS = 10_000;

/** Per target server: its clients and the current run. */
const groups = new Map();

function onFrame(group, client, data) {
  const state = group.state;
  if (!state || state.reported) return;
  state.lastFrameAt = now();
  if (!startsWith(data, CREATED)) {
    if (startsWith(data, ERROR)) {
      state.errors += 1;
      state.firstError ??= data.toString('utf8').slice(0, 300);
    }
    return;
  }
  const mark = data.indexOf(MARK);
  const slot = mark < 0 ? -1 : client.streams.indexOf(digits(data, mark + STREAM_AT, 6));
  const seq = mark < 0 ? -1 : digits(data, mark + SEQ_AT, 6) - state.firstSeq;
  if (slot < 0 || seq < 0 || seq >= state.perStream) {
    state.unexpected += 1;
    return;
  }
  const at = slot * state.perStream + seq;
  if (client.received[at] === 1) {
    state.duplicates += 1;
    return;
  }
  client.received[at] = 1;
  state.bytes += data.length;
  if (seq <= client.lastSeq[slot]) state.outOfOrder += 1;
  client.lastSeq[slot] = seq;
  state.distinct += 1;
  if (++client.count === client.expected) {
    state.doneAt[client.index] = state.lastFrameAt;
    if (++state.done === group.clients.length) report(group);
  }
}

function report(group) {
  const state = group.state;
  if (state.reported) return;
  state.reported = true;
  clearInterval(state.watchdog);
  process.send({
    type: 'report',
    target: group.target,
    run: state.run,
    distinct: state.distinct,
    duplicates: state.duplicates,
    outOfOrder: state.outOfOrder,
    unexpected: state.unexpected,
    errors: state.errors,
    firstError: state.firstError,
    bytes: state.bytes,
    lost: group.closed,
    doneAt: state.doneAt,
  });
}

async function connect({ target, url, subscribers }) {
  const group = { target, clients: [], state: undefined, closed: 0, closing: false };
  groups.set(target, group);
  await inLanes(subscribers.length, CONNECT_CONCURRENCY, async (index) => {
    const { key, subscribe, streams } = subscribers[index];
    const client = { index, subscribe, streams: Int32Array.from(streams), ws: undefined };
    group.clients[index] = client;
    client.ws = await openSubscriber(group, { url, headers: key ? { 'x-api-key': key } : {} }, (data) =>
      onFrame(group, client, data),
    );
  });
}

function go({ target, run, perStream, firstSeq }) {
  const group = groups.get(target);
  const state = {
    run,
    perStream,
    firstSeq,
    distinct: 0,
    duplicates: 0,
    outOfOrder: 0,
    unexpected: 0,
    errors: 0,
    firstError: undefined,
    bytes: 0,
    done: 0,
    doneAt: new Float64Array(group.clients.length).fill(NaN),
    lastFrameAt: now(),
    reported: false,
    watchdog: undefined,
  };
  for (const client of group.clients) {
    client.expected = client.streams.length * perStream;
    client.received = new Uint8Array(client.expected);
    client.lastSeq = new Int32Array(client.streams.length).fill(-1);
    client.count = 0;
  }
  group.state = state;
  state.watchdog = setInterval(() => {
    if (now() - state.lastFrameAt > STALL_MS) report(group);
  }, 250);
  for (const client of group.clients) client.ws.send(client.subscribe);
}

async function disconnect(group) {
  group.closing = true;
  await closeSockets(group.clients.map((client) => client.ws));
  groups.delete(group.target);
}

answerRequests(
  {
    connect,
    disconnect: ({ target }) => disconnect(groups.get(target)),
    close: async () => {
      await Promise.all([...groups.values()].map(disconnect));
    },
  },
  { go },
);
