/**
 * bench/history — 1,000 streams of 100 posts each; 1,000 subscribers arrive
 * at once, each subscribing to 10 streams with `lastPosts=100`: the time
 * until every subscriber has its whole history (1,000,000 history deliveries),
 * for `stream-posts serve` side by side with a bare `ws` server
 * (bench/history-bare-server.mjs) that holds the same posts as ready-made
 * frames and, on subscribe, sends an ack and the last 100 frames of each
 * requested stream. The bare server runs twice: with writes corked per
 * event-loop turn as serve does (`--cork`, a whole history in one write) and
 * frame by frame (a plain `ws` server).
 *
 * Posts come from the seed file (round-robin over the streams, so each
 * subscriber's streams interleave in time); both servers read the same file.
 * Subscriber i has its own reader key, following streams (i × 10 + j) mod
 * streams, j < 10, so every stream is asked for by subscribers / streams × 10
 * subscribers. The subscribers live in `workers` forked processes
 * (bench/history-client.mjs), the same clients for both servers; each server
 * has a process to itself.
 *
 * A run: every subscriber connects (not timed), then both client processes
 * get `go` and each client sends one `on-stream-post` command naming its 10
 * streams with lastPosts; the run's time runs from that `go` to the last
 * history post reaching the last subscriber. Checks: each subscriber gets
 * each expected post once (missing, duplicates, unexpected posts) and a
 * stream's posts in order (PROTOCOL.md B4: history oldest first). Then every
 * client disconnects. stream-posts also merges a subscriber's 10 streams into
 * one history sorted by post id, which the bare server does not.
 *
 * The first run of each side is a warm-up, reported on its own as the cold
 * run: it is when stream-posts encodes every post's frame, which it then
 * keeps for later subscribers. Then `runs` runs per side, alternating which
 * side goes first; figures are medians.
 *
 * Flags (through bench/run.mjs): --streams (1000), --posts-per-stream (100),
 * --subscribers (1000), --streams-per-subscriber (10), --last-posts (100),
 * --workers (2), --runs (3), --content-bytes (200), and --profile[=DIR] to
 * have both servers write a .cpuprofile (read it with bench/profile-summary.mjs).
 */
import { join } from 'node:path';
import { ClientProcess } from './lib/client-process.mjs';
import { now } from './lib/clock.mjs';
import { profileArgs, readFlags } from './lib/config.mjs';
import { REPO_ROOT, startServerProcess, startStreamPosts } from './lib/processes.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, medianOf, percentile, round, sumOf } from './lib/stats.mjs';

const DEFAULTS = {
  streams: 1000,
  postsPerStream: 100,
  subscribers: 1000,
  streamsPerSubscriber: 10,
  lastPosts: 100,
  workers: 2,
  runs: 3,
  contentBytes: 200,
};

/** MAX_LAST_POSTS in src/protocol/limits.ts. */
const MAX_LAST_POSTS = 100;
const streamId = (index) => `hist-${String(index).padStart(6, '0')}`;

const FILLER =
  ' Court filings: motion to compel granted in part; hearing moved to the 14th. $BTC $SOL flows steady. ' +
  'Docket and exhibits: https://example.org/docket/2291 ';

/** Post content: `bench:SSSSSS:PPPPPP:` (stream number, post number), read by history-client.mjs, then filler. */
function content(stream, post, contentBytes) {
  const head = `bench:${String(stream).padStart(6, '0')}:${String(post).padStart(6, '0')}:`;
  return (head + FILLER.repeat(Math.ceil(contentBytes / FILLER.length))).slice(0, contentBytes);
}

function parseConfig(flags) {
  const config = readFlags(flags, DEFAULTS, { whole: true, profile: true });
  if (config.streams >= 1e6 || config.postsPerStream >= 1e6)
    throw new RangeError('--streams and --posts-per-stream must be below 1,000,000');
  if (config.lastPosts > MAX_LAST_POSTS) throw new RangeError(`--last-posts must be at most ${MAX_LAST_POSTS}`);
  if (config.subscribers < config.workers) throw new RangeError('--subscribers must be at least --workers');
  if (config.streamsPerSubscriber > config.streams)
    throw new RangeError('--streams-per-subscriber must be at most --streams');
  if (config.contentBytes < 24)
    throw new RangeError('--content-bytes must be at least 24 (the header the subscribers read)');
  return config;
}

function buildSeed(config) {
  const streams = Array.from({ length: config.streams }, (_, i) => ({
    id: streamId(i),
    name: `Court wire ${i}`,
    owner: 'publisher',
    key: `sp_bench_history_stream_${i}`,
  }));
  const subscriberStreams = Array.from({ length: config.subscribers }, (_, i) =>
    Array.from(
      { length: config.streamsPerSubscriber },
      (_, j) => (i * config.streamsPerSubscriber + j) % config.streams,
    ),
  );
  const users = [
    { id: 'publisher', name: 'Publisher', readerKey: 'sp_bench_history_publisher', follows: [] },
    ...subscriberStreams.map((numbers, i) => ({
      id: `reader-${i}`,
      name: `Reader ${i}`,
      readerKey: `sp_bench_history_reader_${i}`,
      follows: numbers.map(streamId),
    })),
  ];
  const posts = [];
  for (let p = 0; p < config.postsPerStream; p++) {
    for (let s = 0; s < config.streams; s++)
      posts.push({ streamId: streamId(s), content: content(s, p, config.contentBytes), contentType: 'rawtext' });
  }
  return { seed: { users, streams, posts }, subscriberStreams };
}

/** One run on one side: connect everyone, subscribe everyone at once, wait for every history. */
async function measure(side, clients, config, run, subscriberStreams) {
  const exit = side.server.exitStatus();
  if (exit)
    throw new Error(
      `${side.label} exited (code ${exit.code}, signal ${exit.signal}) before run ${run}\n${side.server.stderr().trim()}`,
    );
  const perProcess = Math.ceil(config.subscribers / clients.length);
  const connectStarted = performance.now();
  await Promise.all(
    clients.map((client) => {
      const subscribers = [];
      for (let i = client.index * perProcess; i < Math.min((client.index + 1) * perProcess, config.subscribers); i++) {
        const streams = subscriberStreams[i];
        subscribers.push({
          key: side.keyOf(i),
          streams,
          subscribe: JSON.stringify({
            event: 'on-stream-post',
            data: { streamIds: streams.map(streamId).join(','), lastPosts: config.lastPosts },
          }),
        });
      }
      return client.request({ type: 'connect', target: side.target, url: side.url, subscribers });
    }),
  );
  const connectMs = performance.now() - connectStarted;

  const perStream = Math.min(config.lastPosts, config.postsPerStream);
  const cpuBefore = side.server.cpuTimeMs();
  const startedAt = now();
  const reports = await Promise.all(
    clients.map((client) =>
      client.request(
        { type: 'go', target: side.target, run, perStream, firstSeq: config.postsPerStream - perStream },
        'report',
      ),
    ),
  );
  const cpuMs = side.server.cpuTimeMs() - cpuBefore;
  await Promise.all(clients.map((client) => client.request({ type: 'disconnect', target: side.target })));

  const doneAt = reports.flatMap((report) => [...report.doneAt]);
  const waits = Float64Array.from(doneAt.filter(Number.isFinite).map((at) => at - startedAt)).sort();
  const deliveries = sumOf(reports, 'distinct');
  const expected = config.subscribers * config.streamsPerSubscriber * perStream;
  const allMs = doneAt.every(Number.isFinite) ? waits[waits.length - 1] : null;
  const firstError = reports.find((report) => report.firstError)?.firstError;
  return {
    run,
    connectMs: Math.round(connectMs),
    allMs: allMs === null ? null : round(allMs, 4),
    p50Ms: round(percentile(waits, 50), 4),
    p99Ms: round(percentile(waits, 99), 4),
    deliveries,
    deliveriesPerSecond: allMs ? Math.round((deliveries / allMs) * 1000) : null,
    missing: expected - deliveries,
    duplicates: sumOf(reports, 'duplicates'),
    outOfOrder: sumOf(reports, 'outOfOrder'),
    unexpected: sumOf(reports, 'unexpected'),
    errors: sumOf(reports, 'errors'),
    lostConnections: sumOf(reports, 'lost'),
    ...(firstError ? { firstError } : {}),
    bytesPerDelivery: deliveries > 0 ? round(sumOf(reports, 'bytes') / deliveries, 4) : null,
    serverCpuMs: Number.isFinite(cpuMs) ? Math.round(cpuMs) : null,
    serverRssMiB: side.server.rssMiB() ?? null,
  };
}

function summarize(runs) {
  return {
    allMs: medianOf(runs, 'allMs'),
    p50Ms: medianOf(runs, 'p50Ms'),
    deliveriesPerSecond: medianOf(runs, 'deliveriesPerSecond'),
    serverCpuMs: medianOf(runs, 'serverCpuMs'),
    missing: sumOf(runs, 'missing'),
    duplicates: sumOf(runs, 'duplicates'),
    outOfOrder: sumOf(runs, 'outOfOrder'),
    unexpected: sumOf(runs, 'unexpected'),
    errors: sumOf(runs, 'errors'),
    lostConnections: sumOf(runs, 'lostConnections'),
  };
}

function describe(side, result) {
  return (
    `${side.label.padEnd(18)} all histories in ${result.allMs} ms (p50 ${result.p50Ms} ms), ${result.deliveriesPerSecond} deliveries/s,` +
    ` missing ${result.missing}, duplicates ${result.duplicates}, out of order ${result.outOfOrder}, server CPU ${result.serverCpuMs} ms,` +
    ` RSS ${result.serverRssMiB} MiB (connect ${result.connectMs} ms)`
  );
}

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const { seed, subscriberStreams } = buildSeed(config);
  const seedFile = await writeSeed('history', seed);

  const sides = [];
  const clients = [];
  try {
    let started = performance.now();
    const ours = await startStreamPosts(['--seed', seedFile.path, '--rate-limit', '0'], {
      timeoutMs: 60_000,
      nodeArgs: profileArgs(config, 'stream-posts'),
    });
    sides.push({
      target: 'ours',
      label: 'stream-posts serve',
      server: ours,
      url: `${ours.url}/v1/ws`,
      keyOf: (i) => seed.users[i + 1].readerKey,
    });
    log(
      `  stream-posts serve up with ${seed.posts.length} seed posts in ${Math.round(performance.now() - started)} ms`,
    );
    for (const [target, label, flags] of [
      ['bare', 'bare ws (corked)', ['--cork']],
      ['plain', 'bare ws (plain)', []],
    ]) {
      started = performance.now();
      const bare = await startServerProcess(
        process.execPath,
        [join(REPO_ROOT, 'bench', 'history-bare-server.mjs'), seedFile.path, ...flags],
        {
          name: label,
          timeoutMs: 60_000,
          nodeArgs: profileArgs(config, `bare-ws-${target}`),
        },
      );
      sides.push({ target, label, server: bare, url: `${bare.url}/`, keyOf: () => undefined });
      log(`  ${label} server up in ${Math.round(performance.now() - started)} ms`);
    }
    for (let i = 0; i < config.workers; i++)
      clients.push(new ClientProcess(join(REPO_ROOT, 'bench', 'history-client.mjs'), i));

    let runId = 1;
    const cold = {};
    for (const side of sides) {
      cold[side.target] = await measure(side, clients, config, runId++, subscriberStreams);
      log(`  cold  ${describe(side, cold[side.target])}`);
    }
    const results = { ours: [], bare: [], plain: [] };
    for (let i = 0; i < config.runs; i++) {
      // Each run starts with the next side, so drift over time favours none.
      for (const side of sides.map((_, k) => sides[(k + i) % sides.length])) {
        const result = await measure(side, clients, config, runId++, subscriberStreams);
        results[side.target].push(result);
        log(`  run ${i + 1}/${config.runs} ${describe(side, result)}`);
      }
    }

    const o = summarize(results.ours);
    const all = [...Object.values(results).flat(), ...Object.values(cold)];
    const verified = (s) => s.missing + s.duplicates + s.outOfOrder + s.unexpected + s.errors + s.lostConnections;
    const coldOurs = summarize([cold.ours]);
    const perStream = Math.min(config.lastPosts, config.postsPerStream);
    const deliveries = config.subscribers * config.streamsPerSubscriber * perStream;
    const firstError = all.find((r) => r.firstError)?.firstError;
    const figures = [];
    for (const [target, baseline] of [
      ['bare', 'bare ws, writes corked per turn'],
      ['plain', 'bare ws, frame by frame'],
    ]) {
      const b = summarize(results[target]);
      const coldBare = summarize([cold[target]]);
      const figure = (...args) => comparison(baseline, ...args);
      figures.push(
        figure('time until all histories delivered', 'ms', o.allMs, b.allMs),
        figure('time until a subscriber has its history, p50', 'ms', o.p50Ms, b.p50Ms),
        figure('first (cold) run: time until all histories delivered', 'ms', coldOurs.allMs, coldBare.allMs),
        figure('server CPU per run', 'ms', o.serverCpuMs, b.serverCpuMs),
        figure(
          'missing, duplicate, out-of-order or unexpected deliveries',
          'deliveries',
          verified(o) + verified(coldOurs),
          verified(b) + verified(coldBare),
          {
            ratio: null,
            target: '0',
            met: verified(o) + verified(coldOurs) === 0,
          },
        ),
      );
    }
    return {
      name: 'history',
      figures,
      notes:
        `${config.streams} streams × ${config.postsPerStream} posts (${config.contentBytes}-byte content) from the seed; ` +
        `${config.subscribers} subscribers in ${config.workers} processes, each sending one on-stream-post for ${config.streamsPerSubscriber} streams ` +
        `with lastPosts ${config.lastPosts}, all at once: ${deliveries.toLocaleString('en-US')} history deliveries per run ` +
        `(${results.ours[0]?.bytesPerDelivery} bytes per frame from stream-posts, ${results.bare[0]?.bytesPerDelivery} from the bare server). ` +
        `Time from the go signal to the last history post at the last subscriber; median of ${config.runs} runs per side, in rotating order, ` +
        `after a cold first run each (stream-posts encodes and caches every post's frame then; the bare server has them from the start). ` +
        `Server CPU from /proc (10 ms ticks).` +
        (firstError ? ` First error event: ${firstError}` : ''),
      config,
      runs: { ...results, cold },
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(sides.map((side) => side.server.stop()));
    await seedFile.remove();
  }
}
