/**
 * bench/releases — 100,000 hidden posts with release times spread over the
 * next 30 days, the server clock moved forward through `POST /_admin/clock`:
 * every post must be released once, in release-time order, with the server's
 * memory bounded. Reports the time per 10,000 releases.
 *
 * Processes: `stream-posts serve` (the built CLI, `--rate-limit 0`, a seed of
 * `streams` streams and one reader following all of them) in its own process;
 * this process publishes (one connection per stream key, `window` commands in
 * flight on each) and holds `subscribers` connections of the reader, each
 * subscribed to every stream (`on-stream-post`, no streamIds). Every connection asks for
 * our dialect (`?hello=1`), in which a hidden post is pushed at once and its text comes as
 * `stream.post.released`; the hosted one would send it only at its release.
 *
 * Phases, in this order, on one server:
 *   1. warm-up: `streams` × 100 immediate posts, which also fills every
 *      stream's history ring (the store keeps the last 100 posts per stream),
 *      so the memory checkpoints below all meet full rings;
 *   2. publish `posts` hidden posts, release times drawn from a fixed-seed
 *      PRNG over [base, base + days), base ten minutes ahead; each release
 *      time sits half a minute past a whole minute, and the clock is only ever
 *      moved to whole minutes, so which posts are due after each advance is
 *      exact even though the server's clock also moves with wall time;
 *   3. release: `steps` advances of days/steps each. A step's time runs from
 *      just before the request until the reply is in and every subscriber has
 *      every post due by then (the server releases due posts inside the
 *      request). Time per 10,000 releases = all steps' time / (posts / 10,000);
 *   4. baseline: `posts` immediate (not hidden) posts published the same way
 *      to the same subscribers; its time per 10,000 posts runs from the first
 *      publish to the last delivery. So the ratio compares releasing a post
 *      with publishing and delivering one.
 *
 * Checks: each subscriber receives every hidden post once at creation and
 * once at release (missing, duplicates), releases in non-decreasing release
 * time (ties in any order), none before the clock reached its release time;
 * `/_admin/state` shows `posts` scheduled releases after phase 2 and none after
 * phase 3.
 *
 * Memory: the server runs with an inspector on a loopback port; at each
 * checkpoint (half-way through the warm-up, after it, after scheduling, after
 * release, after the baseline) this process reads VmRSS, then has the server
 * collect garbage and reads its heap used plus external memory ("memory").
 * Per post in history = growth over the warm-up's second half / its posts.
 * Per scheduled post = (growth over phase 2 + the warm-up posts the hidden
 * ones pushed out of the rings, at the per-post-in-history size) / posts.
 * Bounded: after release, and after the baseline, the server holds no more
 * than after the warm-up plus one more full ring per stream (`streams` × 100
 * × bytes per scheduled post). Peak RSS is the server's VmHWM.
 *
 * Flags (through bench/run.mjs): --posts (100000), --days (30), --steps (30),
 * --streams (100), --subscribers (4), --window (8), --stall-ms (10000), and
 * --profile[=DIR] to have the server write a .cpuprofile (read it with
 * bench/profile-summary.mjs).
 */
import { WebSocket } from 'ws';
import { profileArgs, readFlags } from './lib/config.mjs';
import { digits, startsWith } from './lib/frames.mjs';
import { peakRssMiB, startStreamPosts } from './lib/processes.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, round } from './lib/stats.mjs';

const DEFAULTS = {
  posts: 100_000,
  days: 30,
  steps: 30,
  streams: 100,
  subscribers: 4,
  window: 8,
  stallMs: 10_000,
};

/** Posts the store keeps per stream (MAX_LAST_POSTS in src/protocol/limits.ts). */
const RING = 100;
const MINUTE_MS = 60_000;
/** The earliest release time is this far ahead of the server's clock when publishing starts. */
const GRACE_MS = 10 * MINUTE_MS;
const PRNG_SEED = 0x5eed_2026;
const CONTENT_BYTES = 200;
const READER_KEY = 'sp_bench_releases_reader';
const streamId = (index) => `rel-${String(index).padStart(4, '0')}`;
const streamKey = (index) => `sp_bench_releases_stream_${index}`;

const FILLER =
  ' Embargoed: Q3 earnings call transcript, guidance raised to $4.10 a share. $AAPL $MSFT. ' +
  'Full statement at https://example.org/ir/q3 once the embargo lifts. ';

/**
 * Post content: `bench:T:NNNNNNN:` (T = w warm-up, h hidden, s baseline;
 * N = the post's index), then filler. Subscribers read it from the frame bytes.
 */
const MARK = Buffer.from('bench:');
const TAG_AT = MARK.length;
const INDEX_AT = TAG_AT + 2;
const TAG = { warm: 'w'.charCodeAt(0), hidden: 'h'.charCodeAt(0), shown: 's'.charCodeAt(0) };
const CREATED = Buffer.from('{"event":"stream.post.created"');
const RELEASED = Buffer.from('{"event":"stream.post.released"');
const ACK = Buffer.from('{"event":"ack"');
const ERROR = Buffer.from('{"event":"error"');

function content(tag, index) {
  const head = `bench:${tag}:${String(index).padStart(7, '0')}:`;
  return (head + FILLER.repeat(Math.ceil(CONTENT_BYTES / FILLER.length))).slice(0, CONTENT_BYTES);
}

function parseConfig(flags) {
  const config = readFlags(flags, DEFAULTS, { whole: true, profile: true });
  if (config.posts >= 1e7) throw new RangeError('--posts must be below 10,000,000 (the content holds 7 digits)');
  if (config.steps > config.days * 24 * 60) throw new RangeError('--steps must be at most one per minute of --days');
  if (config.streams > 9999) throw new RangeError('--streams must be at most 9,999');
  return config;
}

/** xorshift32: a small PRNG, so every run draws the same release times. */
function prng(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
}

/**
 * The server's V8 inspector (it runs with --inspect on a loopback port): a
 * full garbage collection, then `process.memoryUsage()` read inside it.
 */
async function openInspector(server) {
  const match = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr());
  if (!match) throw new Error(`no inspector address in the server's stderr:\n${server.stderr()}`);
  const ws = new WebSocket(match[1], { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const waiting = new Map();
  let nextId = 1;
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString('utf8'));
    const waiter = waiting.get(message.id);
    if (!waiter) return;
    waiting.delete(message.id);
    if (message.error) waiter.reject(new Error(`inspector: ${message.error.message}`));
    else waiter.resolve(message.result);
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async memoryAfterGc() {
      // Twice: the first pass may only find weak-map entries whose keys die in it.
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const { result } = await call('Runtime.evaluate', {
        expression: 'JSON.stringify(process.memoryUsage())',
        returnByValue: true,
      });
      return JSON.parse(result.value);
    },
    close: () => ws.terminate(),
  };
}

function openSocket(url, headers, readyEvent, onFrame) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, skipUTF8Validation: true });
    let ready = false;
    ws.once('error', (error) => {
      if (!ready) reject(error);
    });
    ws.on('message', (data) => {
      if (ready) {
        onFrame(data);
        return;
      }
      const text = data.toString('utf8');
      if (text.includes('"event":"error"')) reject(new Error(`server refused a connection: ${text}`));
      else if (text.includes(`"event":"${readyEvent}"`)) {
        ready = true;
        resolve(ws);
      }
    });
  });
}

/**
 * The subscribers' side: what each subscriber has received, checked as it
 * arrives, and waiting until every subscriber has something.
 */
class Receiver {
  /** Release time of hidden post i, ms since the epoch. */
  releaseAt;
  /** The clock target of the step under way: a release due later is early. */
  currentTarget = -Infinity;
  subscribers = [];
  #server;
  #stallMs;
  #waiter;
  #lastFrameAt = performance.now();

  constructor(server, posts, stallMs) {
    this.#server = server;
    this.#stallMs = stallMs;
    this.releaseAt = new Float64Array(posts);
  }

  add() {
    const posts = this.releaseAt.length;
    const sub = {
      warm: 0,
      hiddenCreated: 0,
      shown: new Uint8Array(posts),
      shownDistinct: 0,
      released: new Uint8Array(posts),
      releasedDistinct: 0,
      duplicates: 0,
      outOfOrder: 0,
      early: 0,
      lastReleaseAt: -Infinity,
      errors: [],
    };
    this.subscribers.push(sub);
    return (data) => this.#onFrame(sub, data);
  }

  #onFrame(sub, data) {
    const released = startsWith(data, RELEASED);
    if (!released && !startsWith(data, CREATED)) {
      if (startsWith(data, ERROR)) sub.errors.push(data.toString('utf8'));
      return;
    }
    const mark = data.indexOf(MARK);
    if (mark < 0) {
      // A hidden post at creation: its text (and so the mark) is not shown.
      if (!released) sub.hiddenCreated += 1;
    } else {
      const tag = data[mark + TAG_AT];
      const index = digits(data, mark + INDEX_AT, 7);
      if (released && tag === TAG.hidden) {
        if (sub.released[index] === 1) sub.duplicates += 1;
        else {
          sub.released[index] = 1;
          sub.releasedDistinct += 1;
          const at = this.releaseAt[index];
          if (at < sub.lastReleaseAt) sub.outOfOrder += 1;
          if (at > this.currentTarget) sub.early += 1;
          sub.lastReleaseAt = at;
        }
      } else if (tag === TAG.shown) {
        if (sub.shown[index] === 1) sub.duplicates += 1;
        else {
          sub.shown[index] = 1;
          sub.shownDistinct += 1;
        }
      } else if (tag === TAG.warm) sub.warm += 1;
    }
    this.#lastFrameAt = performance.now();
    if (this.#waiter?.done()) this.#waiter.resolve({ ok: true, at: this.#lastFrameAt });
  }

  /**
   * Resolves once `has(subscriber)` holds for every subscriber, with the time
   * of the frame that made it so; or with ok false after stallMs without a frame.
   */
  waitForAll(has) {
    const done = () => this.subscribers.every(has);
    return new Promise((resolve, reject) => {
      if (done()) {
        resolve({ ok: true, at: performance.now() });
        return;
      }
      this.#lastFrameAt = performance.now();
      const finish = (settle, value) => {
        clearInterval(watchdog);
        this.#waiter = undefined;
        settle(value);
      };
      const watchdog = setInterval(() => {
        const exit = this.#server.exitStatus();
        if (exit) {
          finish(
            reject,
            new Error(
              `stream-posts serve exited (code ${exit.code}, signal ${exit.signal})\n${this.#server.stderr().trim()}`,
            ),
          );
        } else if (performance.now() - this.#lastFrameAt > this.#stallMs) {
          finish(resolve, { ok: false, at: performance.now() });
        }
      }, 100);
      this.#waiter = { done, resolve: (value) => finish(resolve, value) };
    });
  }

  total(pick) {
    return this.subscribers.reduce((sum, sub) => sum + pick(sub), 0);
  }
}

/**
 * Publishes `count` posts, post i to stream i % streams on that stream's
 * connection, each connection keeping `window` unacknowledged; resolves at
 * the last ack with the time of the first send.
 */
function publishAll(publishers, window, tag, count, releaseAtIso) {
  return new Promise((resolve, reject) => {
    const n = publishers.length;
    const next = Int32Array.from({ length: n }, (_, i) => i);
    let acked = 0;
    const send = (c) => {
      const i = next[c];
      if (i >= count) return;
      next[c] = i + n;
      const data = { streamId: publishers[c].streamId, content: content(tag, i), contentType: 'rawtext' };
      if (releaseAtIso) data.releaseAt = releaseAtIso(i);
      publishers[c].ws.send(JSON.stringify({ event: 'add-stream-post', data }));
    };
    publishers.forEach((publisher, c) => {
      publisher.onClose = (code) => reject(new Error(`a publisher connection closed (${code})`));
      publisher.onFrame = (data) => {
        // Anything else (keep-alive every 30 s) is not about the posts.
        if (startsWith(data, ACK)) {
          if (++acked === count) resolve({ firstSendAt, lastAckAt: performance.now() });
          else send(c);
        } else if (startsWith(data, ERROR))
          reject(new Error(`a publish failed: ${data.toString('utf8').slice(0, 300)}`));
      };
    });
    const firstSendAt = performance.now();
    for (let w = 0; w < window; w++) for (let c = 0; c < n; c++) send(c);
  });
}

/** How many of the ascending `sorted` are at most `time`. */
function countUpTo(sorted, time) {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] <= time) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Moves the server's clock to base + k × (days / steps), k = 1..steps, and
 * times each step until every subscriber has every release due by then.
 * After a step that stalls, later steps expect what is missing to stay missing.
 */
async function releaseInSteps(receiver, admin, base, config, log) {
  const sorted = Float64Array.from(receiver.releaseAt).sort();
  const minutes = config.days * 24 * 60;
  const steps = [];
  let offsetMs = 0;
  let shortfall = 0;
  let dueBefore = 0;
  for (let k = 1; k <= config.steps; k++) {
    const target = base + Math.round((k * minutes) / config.steps) * MINUTE_MS;
    const due = countUpTo(sorted, target);
    receiver.currentTarget = target;
    const started = performance.now();
    // The server's clock is wall time plus its offset: this lands it on the target (plus the request's few ms).
    const advanceMs = target - (Date.now() + offsetMs);
    if (advanceMs < 0)
      throw new Error(
        `the server's clock passed step ${k}'s target on its own; publishing took longer than ${GRACE_MS / MINUTE_MS} minutes`,
      );
    const reply = await admin('clock', { advanceMs });
    const repliedAt = performance.now();
    offsetMs = reply.clockOffsetMs;
    const delivered = await receiver.waitForAll((sub) => sub.releasedDistinct >= due - shortfall);
    if (!delivered.ok) {
      shortfall = due - Math.min(...receiver.subscribers.map((sub) => sub.releasedDistinct));
      log(`  step ${k}: ${shortfall} release(s) missing after ${config.stallMs} ms without progress`);
    }
    steps.push({ step: k, releases: due - dueBefore, ms: Math.max(delivered.at, repliedAt) - started });
    dueBefore = due;
  }
  return steps;
}

/** Opens the subscribers (subscribed) and one publisher per stream, adding every socket to `sockets`. */
async function openConnections(url, config, receiver, sockets) {
  for (let i = 0; i < config.subscribers; i++) {
    const ws = await openSocket(url, { 'x-api-key': READER_KEY }, 'connected', receiver.add());
    sockets.push(ws);
    const subscribed = new Promise((resolve, reject) => {
      ws.once('message', (data) => {
        const text = data.toString('utf8');
        if (text.includes('"event":"sub_ack"')) resolve();
        else reject(new Error(`subscribe refused: ${text}`));
      });
    });
    // No streamIds: every stream the reader follows, which is all of them.
    ws.send(JSON.stringify({ event: 'on-stream-post', data: {} }));
    await subscribed;
  }
  const publishers = [];
  for (let i = 0; i < config.streams; i++) {
    const publisher = { streamId: streamId(i), onFrame: () => {}, onClose: () => {} };
    publisher.ws = await openSocket(url, { 'x-api-key': streamKey(i) }, 'connected', (data) => publisher.onFrame(data));
    publisher.ws.on('close', (code) => publisher.onClose(code));
    sockets.push(publisher.ws);
    publishers.push(publisher);
  }
  return publishers;
}

function seed(config) {
  const ids = Array.from({ length: config.streams }, (_, i) => streamId(i));
  return {
    users: [
      { id: 'bench-reader', name: 'Bench reader', readerKey: READER_KEY, follows: ids },
      { id: 'newsdesk', name: 'Newsdesk (author)', readerKey: 'sp_bench_releases_newsdesk', follows: [] },
    ],
    streams: ids.map((id, i) => ({ id, name: `Embargo desk ${i}`, owner: 'newsdesk', key: streamKey(i) })),
  };
}

const mib = (bytes) => round(bytes / 2 ** 20, 3);

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seedFile = await writeSeed('releases', seed(config));

  let server;
  let inspector;
  const sockets = [];
  try {
    server = await startStreamPosts(
      // Large enough that a single step releasing everything cannot trip the slow-consumer close.
      [
        '--seed',
        seedFile.path,
        '--rate-limit',
        '0',
        '--max-pending-releases',
        '0',
        '--max-pending-release-bytes',
        '0',
        '--max-buffered',
        String(512 * 1024 * 1024),
      ],
      { nodeArgs: ['--inspect=127.0.0.1:0', ...profileArgs(config, 'releases')] },
    );
    inspector = await openInspector(server);
    const httpUrl = server.url.replace(/^ws/, 'http');
    const admin = async (path, body) => {
      const response = await fetch(
        `${httpUrl}/_admin/${path}`,
        body === undefined
          ? {}
          : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
      );
      const json = await response.json();
      if (!response.ok) throw new Error(`/_admin/${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const receiver = new Receiver(server, config.posts, config.stallMs);
    const publishers = await openConnections(`${server.url}/v1/ws?hello=1`, config, receiver, sockets);
    const publish = (tag, count, releaseAtIso) => publishAll(publishers, config.window, tag, count, releaseAtIso);
    log(`  ${config.subscribers} subscribers and ${config.streams} publisher connections ready`);

    const checkpoints = [];
    const checkpoint = async (label) => {
      const rssMiB = server.rssMiB() ?? null;
      const memory = await inspector.memoryAfterGc();
      const state = await admin('state');
      const point = {
        label,
        rssMiB,
        heapUsedMiB: mib(memory.heapUsed),
        externalMiB: mib(memory.external),
        retainedBytes: memory.heapUsed + memory.external,
        scheduledReleases: state.scheduledReleases,
      };
      checkpoints.push(point);
      log(
        `  ${label.padEnd(15)} RSS ${rssMiB} MiB, heap ${point.heapUsedMiB} MiB + external ${point.externalMiB} MiB after GC,` +
          ` ${state.scheduledReleases} scheduled releases`,
      );
      return point;
    };

    // 1. Warm-up, filling every stream's history ring in two halves: the
    // second half's growth is what a post in history costs, one-time costs
    // (compiled code, first allocations) falling in the first.
    const warmPosts = config.streams * RING;
    const warmUp = async (upTo) => {
      await publish('w', warmPosts / 2);
      if (!(await receiver.waitForAll((sub) => sub.warm >= upTo)).ok)
        throw new Error('the warm-up posts did not all arrive');
    };
    await warmUp(warmPosts / 2);
    const halfRings = await checkpoint('half rings');
    await warmUp(warmPosts);
    const before = await checkpoint('before');

    // 2. Hidden posts.
    const random = prng(PRNG_SEED);
    const minutes = config.days * 24 * 60;
    const base = Math.ceil((Date.now() + GRACE_MS) / MINUTE_MS) * MINUTE_MS;
    const { releaseAt } = receiver;
    for (let i = 0; i < config.posts; i++)
      releaseAt[i] = base + Math.floor(random() * minutes) * MINUTE_MS + MINUTE_MS / 2;
    let cpuBefore = server.cpuTimeMs();
    const hidden = await publish('h', config.posts, (i) => new Date(releaseAt[i]).toISOString());
    const hiddenDelivered = await receiver.waitForAll((sub) => sub.hiddenCreated >= config.posts);
    const hiddenCpuMs = server.cpuTimeMs() - cpuBefore;
    const hiddenPublishMs = hidden.lastAckAt - hidden.firstSendAt;
    log(
      `  published ${config.posts} hidden posts in ${Math.round(hiddenPublishMs)} ms` +
        ` (${Math.round((config.posts / hiddenPublishMs) * 1000)} posts/s), delivered hidden in ${Math.round(hiddenDelivered.at - hidden.firstSendAt)} ms`,
    );
    const scheduled = await checkpoint('scheduled');

    // 3. Release.
    cpuBefore = server.cpuTimeMs();
    const steps = await releaseInSteps(receiver, admin, base, config, log);
    const releaseCpuMs = server.cpuTimeMs() - cpuBefore;
    const releaseMs = steps.reduce((sum, step) => sum + step.ms, 0);
    const slowestStepMs = Math.max(...steps.map((step) => step.ms));
    log(
      `  released in ${config.steps} steps: ${Math.round(releaseMs)} ms in all, slowest step ${Math.round(slowestStepMs)} ms`,
    );
    const released = await checkpoint('released');

    // 4. Baseline: immediate posts.
    cpuBefore = server.cpuTimeMs();
    const shown = await publish('s', config.posts);
    const shownDelivered = await receiver.waitForAll((sub) => sub.shownDistinct >= config.posts);
    const shownCpuMs = server.cpuTimeMs() - cpuBefore;
    const shownPublishMs = shown.lastAckAt - shown.firstSendAt;
    const shownMs = Math.max(shownDelivered.at, shown.lastAckAt) - shown.firstSendAt;
    log(
      `  baseline: ${config.posts} immediate posts published in ${Math.round(shownPublishMs)} ms, delivered in ${Math.round(shownMs)} ms`,
    );
    const afterBaseline = await checkpoint('after baseline');
    const peakRss = peakRssMiB(server.pid) ?? null;

    const per10k = config.posts / 10_000;
    const missing =
      receiver.total((sub) => config.posts - sub.releasedDistinct) +
      receiver.total((sub) => Math.max(config.posts - sub.hiddenCreated, 0)) +
      receiver.total((sub) => config.posts - sub.shownDistinct);
    const duplicates = receiver.total((sub) => sub.duplicates + Math.max(sub.hiddenCreated - config.posts, 0));
    const outOfOrder = receiver.total((sub) => sub.outOfOrder);
    const early = receiver.total((sub) => sub.early);
    const errors = receiver.subscribers.flatMap((sub) => sub.errors);
    const bytesPerStored = Math.round((before.retainedBytes - halfRings.retainedBytes) / (warmPosts / 2));
    // The hidden posts pushed warm-up posts out of the rings, which freed those: add them back.
    let evicted = 0;
    for (let c = 0; c < config.streams; c++) evicted += Math.min(RING, Math.ceil((config.posts - c) / config.streams));
    const bytesPerScheduled = Math.round(
      (scheduled.retainedBytes - before.retainedBytes + evicted * bytesPerStored) / config.posts,
    );
    // After release only each stream's ring of recent posts should remain.
    const ringBound = config.streams * RING * Math.max(bytesPerScheduled, 0);
    const retainedAfterRelease = released.retainedBytes - before.retainedBytes;
    const retainedAfterBaseline = afterBaseline.retainedBytes - before.retainedBytes;
    const deliveriesPerSecond = (ms) => Math.round(((config.posts * config.subscribers) / ms) * 1000);
    const figure = (...args) => comparison('immediate posts', ...args);
    const own = (name, unit, value, extra) => comparison(null, name, unit, value, null, extra);

    return {
      name: 'releases',
      figures: [
        figure('time per 10,000 releases', 'ms', round(releaseMs / per10k, 3), round(shownMs / per10k, 3)),
        figure('deliveries per second', 'deliveries/s', deliveriesPerSecond(releaseMs), deliveriesPerSecond(shownMs)),
        own('slowest clock step', 'ms', round(slowestStepMs, 3)),
        figure(
          'publish rate (hidden vs immediate)',
          'posts/s',
          Math.round((config.posts / hiddenPublishMs) * 1000),
          Math.round((config.posts / shownPublishMs) * 1000),
        ),
        figure('server CPU per 10,000 posts', 'ms', round(releaseCpuMs / per10k, 3), round(shownCpuMs / per10k, 3)),
        own('server CPU per 10,000 hidden posts published', 'ms', round(hiddenCpuMs / per10k, 3)),
        own('missing deliveries (hidden, released, immediate)', 'deliveries', missing, {
          target: '0',
          met: missing === 0,
        }),
        own('duplicate deliveries', 'deliveries', duplicates, { target: '0', met: duplicates === 0 }),
        own('releases out of release-time order', 'deliveries', outOfOrder, { target: '0', met: outOfOrder === 0 }),
        own('releases before their time', 'deliveries', early, { target: '0', met: early === 0 }),
        own('scheduled releases left', 'posts', released.scheduledReleases, {
          target: '0',
          met: released.scheduledReleases === 0 && scheduled.scheduledReleases === config.posts,
        }),
        own('server memory per scheduled post', 'bytes', bytesPerScheduled),
        own('server memory per post in history', 'bytes', bytesPerStored),
        own('server memory retained after release', 'MiB', mib(retainedAfterRelease), {
          target: `<= ${mib(ringBound)} MiB (${config.streams} streams × ${RING} posts)`,
          met: retainedAfterRelease <= ringBound && retainedAfterBaseline <= ringBound,
        }),
        own('server RSS with every post scheduled', 'MiB', scheduled.rssMiB),
        own('server RSS after release', 'MiB', released.rssMiB),
        own('server peak RSS', 'MiB', peakRss),
      ],
      notes:
        `${config.posts.toLocaleString('en-US')} hidden posts over ${config.streams} streams, release times over ${config.days} days ` +
        `(fixed-seed PRNG, whole minutes + 30 s), released by ${config.steps} clock advances through POST /_admin/clock; ` +
        `${config.subscribers} subscribers of every stream in the measuring process. ` +
        `Baseline: the same server publishing ${config.posts.toLocaleString('en-US')} immediate posts to the same subscribers ` +
        `(${config.window} in flight per publisher connection), first publish to last delivery. ` +
        `Memory = heap used + external after a forced GC (inspector); per post in history = growth over the warm-up's second half; ` +
        `per scheduled post = growth over the hidden posts plus the warm-up posts they pushed out of the rings; ` +
        `retained = growth since the warm-up filled every history ring ` +
        `(${mib(retainedAfterBaseline)} MiB after the baseline); ` +
        `RSS ${checkpoints.map((point) => `${point.label} ${point.rssMiB}`).join(', ')} MiB. ` +
        `Server CPU from /proc (10 ms ticks).` +
        (errors.length > 0
          ? ` Subscribers got ${errors.length} error event(s), first: ${errors[0].slice(0, 200)}`
          : ''),
      config,
      releaseMs: round(releaseMs, 4),
      baselineMs: round(shownMs, 4),
      hiddenPublishMs: round(hiddenPublishMs, 4),
      hiddenDeliveredMs: round(hiddenDelivered.at - hidden.firstSendAt, 4),
      checkpoints,
      steps: steps.map((step) => ({ ...step, ms: round(step.ms, 4) })),
    };
  } finally {
    for (const ws of sockets) ws.terminate();
    // Closed before the server stops: a process with an inspector client attached waits for it to leave.
    inspector?.close();
    await server?.stop();
    await seedFile.remove();
  }
}
