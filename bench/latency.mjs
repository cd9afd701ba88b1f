/**
 * bench/latency — publish-to-delivery latency of `stream-posts serve` under a
 * steady load: 1,000 subscribers over 100 streams (10 per stream), 2,000
 * posts/s for 30 s, side by side with a bare `ws` server
 * (bench/latency-bare-server.mjs) that does the least the same clients need,
 * twice: writes corked per event-loop turn as serve does (`--cork`, the
 * baseline the ratios are against) and frame by frame (a plain `ws` server).
 * With --store=redis, serve on a Redis store of the benchmark's own is a side
 * too (and with --instances=2, two serve instances on that one Redis), against
 * the memory store, with Redis commands and bytes per post (INFO deltas).
 * Reports p50/p99/max latency, deliveries missing or duplicated (must be 0)
 * and server CPU. Targets: p99 under 20 ms; the Redis store's p99 ≤ 2× the
 * memory store's.
 *
 * Seed (a temp file for `serve --seed`): streams lat-000…, each with its own
 * owner and stream key; one reader user per subscriber, following the one
 * stream it subscribes to (subscriber i → stream i % streams). `--rate-limit
 * 0`: the publisher sends far more than the default 200 commands/s.
 *
 * Processes: the server under test (each side in turn, alone), two subscriber
 * processes (bench/latency-client.mjs) holding the subscribers, and this
 * process, which publishes: one connection per stream key (a stream key may
 * publish to its own stream only), an `add-stream-post` per post,
 * round-robin over the streams.
 *
 * Pacing is open loop: every `tickMs` the publisher sends the posts that are
 * due by then at `rate` posts/s, whatever the server does with them, so a
 * server that falls behind shows it as latency. Each post's content carries
 * the time its frame is sent; latency is the time a subscriber's client sees
 * the `stream.post.created` frame minus that. How late the publisher itself
 * was against its schedule is reported beside it (publisherLag), so a
 * publisher starved of CPU can be told apart from a slow server.
 *
 * Each side, in each run: a fresh server, connect every subscriber, a
 * `warmupSeconds` run at the same rate (not measured), then the measured run. After publishing ends, the run lasts
 * until every post is acked and every subscriber has all its stream's posts
 * (or `settleMs` pass with nothing new). Missing = expected (posts × the
 * stream's subscribers) − distinct deliveries; duplicates, misrouted posts
 * and lost connections are counted too. Server CPU is the server process's
 * user + system time from the first publish to the last ack (/proc, 10 ms
 * ticks), as % of one core and per 1,000 deliveries.
 *
 * Flags (through bench/run.mjs): --seconds (30), --rate (2000), --subscribers
 * (1000), --streams (100), --warmup-seconds (5), --workers (2, subscriber
 * processes), --runs (3 per side, rotating order), --store (memory; redis adds
 * the Redis sides), --instances (1; 2 adds the two-instance side),
 * --content-bytes (200), --tick-ms (1), --settle-ms (3000), --target (the
 * p99 limit in ms, 20), and --profile[=DIR] to have both servers write a
 * .cpuprofile (read it with bench/profile-summary.mjs).
 */
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { ClientProcess } from './lib/client-process.mjs';
import { timedContent } from './lib/clock.mjs';
import { profileArgs, readFlags, requireWhole } from './lib/config.mjs';
import { REPO_ROOT, asOne, cpuTimeMs, startServerProcess, startStreamPosts } from './lib/processes.mjs';
import { openPublisher } from './lib/publisher.mjs';
import { perUnit, startRedis } from './lib/redis.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, median, medianOf, percentile, round, sortedConcat, sumOf } from './lib/stats.mjs';

const DEFAULTS = {
  seconds: 30,
  rate: 2000,
  subscribers: 1000,
  streams: 100,
  /** Long enough for stream-posts to fill its history (100 posts per stream: 5 s at 20 posts/s per stream). */
  warmupSeconds: 5,
  workers: 2,
  contentBytes: 200,
  tickMs: 1,
  settleMs: 3000,
  /** p99 must stay under this many milliseconds. */
  target: 20,
  runs: 3,
  /** With --store=redis: 2 adds a side of two instances on the one Redis. */
  instances: 1,
};

const pad = (value, width) => String(value).padStart(width, '0');
const streamId = (stream) => `lat-${pad(stream, 3)}`;
const streamKey = (stream) => `sp_lat_stream_${pad(stream, 3)}`;
const readerKey = (subscriber) => `sp_lat_reader_${pad(subscriber, 5)}`;

/** Starts the header of post content, which the subscribers read (see latency-client.mjs). */
const MARK = 'lat:';

function parseConfig(flags) {
  // --profile: both servers write a V8 CPU profile (.cpuprofile) when they stop.
  const config = readFlags(flags, DEFAULTS, { profile: true });
  requireWhole(config, ['subscribers', 'streams', 'workers', 'contentBytes', 'runs', 'instances']);
  config.store = flags?.store ?? 'memory';
  if (!['memory', 'redis'].includes(config.store))
    throw new RangeError(`--store must be memory or redis, got "${config.store}"`);
  if (config.streams > 1000) throw new RangeError('--streams must be at most 1,000');
  if (config.subscribers % config.streams !== 0) throw new RangeError('--subscribers must be a multiple of --streams');
  if (config.subscribers % config.workers !== 0) throw new RangeError('--subscribers must be a multiple of --workers');
  if (config.subscribers >= 100_000) throw new RangeError('--subscribers must be below 100,000');
  if (config.rate * Math.max(config.seconds, config.warmupSeconds) >= 1e6)
    throw new RangeError('--rate × --seconds must be below 1,000,000 posts');
  if (config.contentBytes < 64)
    throw new RangeError('--content-bytes must be at least 64 (the header the subscribers read)');
  return config;
}

function seed(config) {
  const users = [];
  const streams = [];
  for (let s = 0; s < config.streams; s++) {
    users.push({
      id: `lat-owner-${pad(s, 3)}`,
      name: `Latency owner ${s}`,
      readerKey: `sp_lat_owner_${pad(s, 3)}`,
      follows: [],
    });
    // Named by its id, as the bare server names it, so both send frames of one size.
    streams.push({ id: streamId(s), name: streamId(s), owner: `lat-owner-${pad(s, 3)}`, key: streamKey(s) });
  }
  for (let i = 0; i < config.subscribers; i++) {
    users.push({
      id: `lat-reader-${pad(i, 5)}`,
      name: `Latency reader ${i}`,
      readerKey: readerKey(i),
      follows: [streamId(i % config.streams)],
    });
  }
  return { users, streams };
}

/** The sides a run compares, by the target name the subscriber processes know them by. */
const SIDES = {
  memory: 'serve (memory)',
  redis: 'serve (redis)',
  redis2: 'serve (redis) ×2',
  bare: 'bare ws (corked)',
  plain: 'bare ws (plain)',
};

async function startServers(target, seedPath, config, redis) {
  const bare = (flags) =>
    startServerProcess(process.execPath, [join(REPO_ROOT, 'bench', 'latency-bare-server.mjs'), ...flags], {
      name: SIDES[target],
      nodeArgs: profileArgs(config, target),
    });
  const serve = (flags = []) =>
    startStreamPosts(['--seed', seedPath, '--rate-limit', '0', ...flags], { nodeArgs: profileArgs(config, target) });
  if (target === 'bare') return [await bare(['--cork'])];
  if (target === 'plain') return [await bare([])];
  if (target === 'memory') return [await serve()];
  // Each Redis side starts from an empty keyspace; a second instance finds the seed loaded.
  await redis.flush();
  const servers = [];
  try {
    for (let i = 0; i < (target === 'redis2' ? 2 : 1); i++) servers.push(await serve(['--store', redis.url]));
  } catch (error) {
    await asOne(servers).stop();
    throw error;
  }
  return servers;
}

/**
 * Starts one side's server(s) and opens its publishers (one per stream). With two
 * instances, stream s is published on instance s % 2 and its subscribers are spread over
 * both (see subscriberUrl), so half of every stream's deliveries cross Redis.
 */
async function startSide(target, seedPath, config, redis) {
  const servers = await startServers(target, seedPath, config, redis);
  const urls = servers.map((server) => `${server.url}/v1/ws`);
  const side = {
    target,
    label: SIDES[target],
    server: asOne(servers),
    urls,
    redis: target.startsWith('redis') ? redis : undefined,
    publishers: [],
    lost: 0,
  };
  try {
    side.publishers = await Promise.all(
      Array.from({ length: config.streams }, (_, s) =>
        openPublisher(urls[s % urls.length], { 'x-api-key': streamKey(s) }),
      ),
    );
  } catch (error) {
    await stopSide(side);
    throw error;
  }
  return side;
}

/** Subscriber i's instance: i and i + streams follow the same stream on different instances. */
const subscriberUrl = (side, i, config) => side.urls[Math.floor(i / config.streams) % side.urls.length];

async function stopSide(side) {
  for (const ws of side.publishers) ws.terminate();
  await side.server.stop();
}

/** Index of the first value ≥ `value` in an ascending-sorted array (its length when none is). */
function lowerBound(sorted, value) {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle] < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Publishes `rate` posts/s for `seconds` on one side, waits for the acks and
 * deliveries, and resolves to the run's figures.
 */
async function measure(side, clients, config, run, seconds) {
  const { server, publishers } = side;
  const exit = server.exitStatus();
  if (exit || publishers.some((ws) => ws.readyState !== WebSocket.OPEN)) {
    const how = exit ? `exited (code ${exit.code}, signal ${exit.signal})` : 'closed a publisher connection';
    const stderr = server.stderr().trim();
    throw new Error(`${side.label} ${how} before run ${run}${stderr ? `:\n${stderr}` : ''}`);
  }
  const total = Math.round(config.rate * seconds);
  await Promise.all(
    clients.map((client) =>
      client.request({ type: 'arm', target: side.target, run, posts: total, streams: config.streams }),
    ),
  );

  const lost = side.lost;
  const lagMs = new Float32Array(total);
  /** When each post was sent, and how long its ack took (the publisher's own wait). */
  const sentAt = new Float64Array(total);
  const ackMs = [];
  let acks = 0;
  let sent = 0;
  let failure;
  /** Called on every ack and failure while the acks are awaited. */
  let ackProgress;
  const fail = (error) => {
    failure ??= error;
    ackProgress?.();
  };
  const onMessage = (data) => {
    if (data.includes('"event":"ack"')) {
      acks += 1;
      const seq = /"requestId":"l(\d+)"/.exec(data.toString('latin1'))?.[1];
      if (seq !== undefined) ackMs.push(performance.now() - sentAt[Number(seq)]);
      ackProgress?.();
    } else if (data.includes('"event":"error"')) {
      fail(new Error(`${side.label} refused a post: ${data.toString('utf8').slice(0, 300)}`));
    }
  };
  const onClose = (code) => fail(new Error(`${side.label} closed a publisher connection (${code})`));
  for (const ws of publishers) {
    ws.on('message', onMessage);
    ws.on('close', onClose);
  }
  try {
    const redisBefore = side.redis ? await side.redis.counters() : undefined;
    const redisCpuBefore = side.redis ? cpuTimeMs(side.redis.pid) : undefined;
    const cpuBefore = server.cpuTimeMs();
    const clientCpuBefore = clients.map((client) => cpuTimeMs(client.pid));
    const ownCpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    const intervalMs = 1000 / config.rate;
    await new Promise((resolve) => {
      const tick = () => {
        const due = Math.min(total, Math.floor((performance.now() - startedAt) / intervalMs) + 1);
        while (sent < due && !failure) {
          const seq = sent++;
          const stream = seq % config.streams;
          const frame = JSON.stringify({
            event: 'add-stream-post',
            data: {
              streamId: streamId(stream),
              content: timedContent(MARK, run, seq, config.contentBytes),
              contentType: 'rawtext',
            },
            requestId: `l${seq}`,
          });
          sentAt[seq] = performance.now();
          publishers[stream].send(frame);
          lagMs[seq] = performance.now() - (startedAt + seq * intervalMs);
        }
        if (sent === total || failure) {
          clearInterval(timer);
          resolve();
        }
      };
      const timer = setInterval(tick, config.tickMs);
      tick();
    });
    const publishedAt = performance.now();
    // Every ack, or `settleMs` without a new one.
    await new Promise((resolve) => {
      let quiet;
      const rearm = () => {
        clearTimeout(quiet);
        if (acks >= sent || failure) resolve();
        else quiet = setTimeout(resolve, config.settleMs);
      };
      ackProgress = rearm;
      rearm();
    });
    ackProgress = undefined;
    const ackedAt = performance.now();
    const cpuMs = server.cpuTimeMs() - cpuBefore;
    const redisCpuMs = side.redis ? cpuTimeMs(side.redis.pid) - redisCpuBefore : undefined;
    const clientCpuMs = clients.map((client, i) => cpuTimeMs(client.pid) - clientCpuBefore[i]);
    const ownCpu = process.cpuUsage(ownCpuBefore);
    if (failure) throw failure;

    const reports = await Promise.all(
      clients.map((client) => client.request({ type: 'collect', target: side.target, run, published: sent })),
    );
    const deliveries = sumOf(reports, 'distinct');
    const expected = sent * (config.subscribers / config.streams);
    // After collect, so the bytes of every delivery's pub/sub message are counted.
    const redisPerPost = side.redis ? perUnit(redisBefore, await side.redis.counters(), sent) : null;
    const latencies = sortedConcat(reports.map((report) => report.latencies));
    const lag = lagMs.slice(0, sent).sort();
    const worst = reports.reduce((a, b) => (b.maxMs > a.maxMs ? b : a));
    const wallMs = ackedAt - startedAt;
    return {
      run,
      posts: sent,
      publishSeconds: round((publishedAt - startedAt) / 1000, 4),
      acks,
      expected,
      deliveries,
      missing: expected - deliveries,
      duplicates: sumOf(reports, 'duplicates'),
      misrouted: sumOf(reports, 'misrouted'),
      stale: sumOf(reports, 'stale'),
      lostConnections: side.lost - lost,
      p50Ms: round(percentile(latencies, 50), 3),
      /** Publish to ack, as the publisher waits for it (null where the server echoes no requestId). */
      ackP50Ms:
        ackMs.length > 0
          ? round(
              percentile(
                ackMs.sort((a, b) => a - b),
                50,
              ),
              3,
            )
          : null,
      p90Ms: round(percentile(latencies, 90), 3),
      p99Ms: round(percentile(latencies, 99), 3),
      p999Ms: round(percentile(latencies, 99.9), 3),
      maxMs: round(percentile(latencies, 100), 3),
      /** When the post of the slowest delivery was sent, in seconds into the run. */
      maxSentAtSecond: deliveries > 0 ? round((worst.maxSentAt - performance.timeOrigin - startedAt) / 1000, 3) : null,
      /** Deliveries that took `target` ms or more. */
      deliveriesOverTarget: latencies.length - lowerBound(latencies, config.target),
      publisherLag: {
        p50Ms: round(percentile(lag, 50), 3),
        p99Ms: round(percentile(lag, 99), 3),
        maxMs: round(percentile(lag, 100), 3),
      },
      serverCpuPercent: round((cpuMs / wallMs) * 100, 3),
      serverCpuMsPer1kDeliveries: deliveries > 0 ? round((cpuMs / deliveries) * 1000, 3) : null,
      subscriberCpuPercent: clientCpuMs.map((ms) => round((ms / wallMs) * 100, 3)),
      publisherCpuPercent: round(((ownCpu.user + ownCpu.system) / 1000 / wallMs) * 100, 3),
      serverRssMiB: server.rssMiB() ?? null,
      redisCpuPercent: side.redis ? round((redisCpuMs / wallMs) * 100, 3) : null,
      /** Redis commands (INFO commandstats, those run inside scripts included), bytes in + out and used_memory change, per post. */
      redisPerPost,
    };
  } finally {
    ackProgress = undefined;
    for (const ws of publishers) {
      ws.off('message', onMessage);
      ws.off('close', onClose);
    }
  }
}

/**
 * Starts a side, connects every subscriber to it, warms it up and measures
 * it; the side is stopped after, whatever happens. `sides` holds it meanwhile
 * (for counting lost subscribers).
 */
async function measureSide(target, seedPath, clients, sides, config, runId, log, redis) {
  const side = await startSide(target, seedPath, config, redis);
  sides.set(target, side);
  try {
    const started = performance.now();
    const perProcess = config.subscribers / config.workers;
    await Promise.all(
      clients.map((client) => {
        const first = client.index * perProcess;
        const subscribers = Array.from({ length: perProcess }, (_, j) => {
          const i = first + j;
          return {
            key: readerKey(i),
            streamId: streamId(i % config.streams),
            stream: i % config.streams,
            url: subscriberUrl(side, i, config),
          };
        });
        return client.request({ type: 'connect', target, url: side.urls[0], subscribers, settleMs: config.settleMs });
      }),
    );
    log(
      `  ${side.label}: ${config.subscribers} subscribers and ${config.streams} publishers ready in ${Math.round(performance.now() - started)} ms`,
    );

    const warm = await measure(side, clients, config, runId, config.warmupSeconds);
    log(`  ${side.label}: warmed up (${warm.posts} posts, p99 ${warm.p99Ms} ms, missing ${warm.missing})`);
    const result = await measure(side, clients, config, runId + 1, config.seconds);
    log(
      `  ${side.label.padEnd(18)} ${result.posts} posts in ${result.publishSeconds} s  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms  max ${result.maxMs} ms` +
        ` (post sent at ${result.maxSentAtSecond} s)  missing ${result.missing}  server CPU ${result.serverCpuPercent}% (${result.serverCpuMsPer1kDeliveries} ms/1k)` +
        `  subscribers CPU ${result.subscriberCpuPercent.join('/')}%  publisher CPU ${result.publisherCpuPercent}% lag p99 ${result.publisherLag.p99Ms} ms`,
    );
    return result;
  } finally {
    await Promise.allSettled(clients.map((client) => client.request({ type: 'disconnect', target })));
    sides.delete(target);
    await stopSide(side);
  }
}

const clean = (r) =>
  r.missing === 0 && r.duplicates === 0 && r.misrouted === 0 && r.lostConnections === 0 && r.acks === r.posts;

/** The medians over a side's runs, and the counts of problems summed over them. */
function summarize(runs) {
  const perPost = runs.map((r) => r.redisPerPost).filter(Boolean);
  return {
    p50Ms: medianOf(runs, 'p50Ms'),
    ackP50Ms: runs.every((r) => r.ackP50Ms !== null) ? medianOf(runs, 'ackP50Ms') : null,
    p99Ms: medianOf(runs, 'p99Ms'),
    maxMs: medianOf(runs, 'maxMs'),
    p99Runs: runs.map((r) => r.p99Ms),
    posts: sumOf(runs, 'posts'),
    expected: sumOf(runs, 'expected'),
    missing: sumOf(runs, 'missing'),
    duplicates: sumOf(runs, 'duplicates'),
    clean: runs.every(clean),
    serverCpuPercent: medianOf(runs, 'serverCpuPercent'),
    serverCpuMsPer1kDeliveries: medianOf(runs, 'serverCpuMsPer1kDeliveries'),
    redisCpuPercent: perPost.length > 0 ? medianOf(runs, 'redisCpuPercent') : null,
    redisCommandsPerPost: perPost.length > 0 ? median(perPost.map((p) => p.commands)) : null,
    redisBytesPerPost: perPost.length > 0 ? median(perPost.map((p) => p.bytes)) : null,
    redisCommandsByName: perPost[0]?.byCommand ?? null,
  };
}

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seedFile = await writeSeed('latency', seed(config));
  const targets = [
    'memory',
    ...(config.store === 'redis' ? ['redis', ...(config.instances >= 2 ? ['redis2'] : [])] : []),
    'bare',
    'plain',
  ];

  const sides = new Map();
  const clients = [];
  let redis;
  try {
    if (config.store === 'redis') redis = await startRedis();
    const onLost = (message) => {
      const side = sides.get(message.target);
      if (!side) return;
      side.lost += 1;
      // 1, 10, 100, 1000: enough to see it happen without a line per socket.
      if (Number.isInteger(Math.log10(side.lost)))
        log(`  ${side.label}: ${side.lost} subscriber(s) lost; last close code ${message.code}`);
    };
    for (let i = 0; i < config.workers; i++) {
      const client = new ClientProcess(join(REPO_ROOT, 'bench', 'latency-client.mjs'), i);
      client.on('lost', onLost);
      clients.push(client);
    }

    const results = Object.fromEntries(targets.map((target) => [target, []]));
    let runId = 1;
    for (let i = 0; i < config.runs; i++) {
      // Each run starts with the next side, so drift over time favours none.
      const order = targets.map((_, k) => targets[(k + i) % targets.length]);
      log(`  run ${i + 1}/${config.runs}: ${order.map((target) => SIDES[target]).join(', ')}`);
      for (const target of order) {
        results[target].push(await measureSide(target, seedFile.path, clients, sides, config, runId, log, redis));
        runId += 2;
      }
    }
    const s = Object.fromEntries(targets.map((target) => [target, summarize(results[target])]));
    const o = s.memory;
    const vs =
      (baseline) =>
      (...args) =>
        comparison(baseline, ...args);
    const figures = [];
    for (const [target, baseline] of [
      ['bare', 'bare ws, writes corked per turn'],
      ['plain', 'bare ws, frame by frame'],
    ]) {
      const figure = vs(baseline);
      figures.push(
        figure('memory store: publish-to-delivery p50', 'ms', o.p50Ms, s[target].p50Ms),
        figure('memory store: publish-to-delivery p99', 'ms', o.p99Ms, s[target].p99Ms, {
          target: `< ${config.target} ms`,
          met: o.p99Ms < config.target,
        }),
        figure('memory store: publish-to-delivery max', 'ms', o.maxMs, s[target].maxMs),
        figure(
          'memory store: server CPU per 1,000 deliveries',
          'ms',
          o.serverCpuMsPer1kDeliveries,
          s[target].serverCpuMsPer1kDeliveries,
        ),
      );
    }
    const vsMemory = vs('serve, memory store');
    for (const target of ['redis', 'redis2'].filter((t) => s[t])) {
      const r = s[target];
      const name = target === 'redis' ? 'Redis store' : 'Redis store, 2 instances';
      figures.push(
        vsMemory(`${name}: publish-to-delivery p50`, 'ms', r.p50Ms, o.p50Ms),
        vsMemory(`${name}: publish-to-ack p50`, 'ms', r.ackP50Ms, o.ackP50Ms, {
          target: '≤ 2× memory',
          met: r.ackP50Ms !== null && o.ackP50Ms !== null && r.ackP50Ms <= 2 * o.ackP50Ms,
        }),
        vsMemory(`${name}: publish-to-delivery p99`, 'ms', r.p99Ms, o.p99Ms, {
          target: '≤ 2× memory',
          met: r.p99Ms <= 2 * o.p99Ms,
        }),
        vsMemory(`${name}: publish-to-delivery max`, 'ms', r.maxMs, o.maxMs),
        vsMemory(
          `${name}: server CPU per 1,000 deliveries (all instances)`,
          'ms',
          r.serverCpuMsPer1kDeliveries,
          o.serverCpuMsPer1kDeliveries,
        ),
        comparison(null, `${name}: redis-server CPU`, '% of a core', r.redisCpuPercent, null),
        comparison(
          null,
          `${name}: Redis commands per post (scripts' included)`,
          'commands',
          r.redisCommandsPerPost,
          null,
        ),
        comparison(null, `${name}: Redis bytes in + out per post`, 'B', r.redisBytesPerPost, null),
      );
    }
    for (const target of targets) {
      figures.push({
        ...comparison(
          null,
          `${SIDES[target]}: missing / duplicated deliveries`,
          'deliveries',
          `${s[target].missing} / ${s[target].duplicates}`,
          null,
        ),
        target: '0',
        met: s[target].clean,
      });
    }
    return {
      name: 'latency',
      figures,
      notes:
        `${config.subscribers} subscribers over ${config.streams} streams (${config.subscribers / config.streams} each) in ${config.workers} subscriber processes; ` +
        `${config.rate} posts/s for ${config.seconds} s per run (${o.posts / config.runs} posts, ${o.expected / config.runs} deliveries expected), open loop, round-robin over the streams, ` +
        `one publisher connection per stream key; ${config.contentBytes}-byte content. Each server alone, after a ${config.warmupSeconds} s warm-up at the same rate; ` +
        `${config.runs} runs per side, sides in rotating order, medians. ` +
        (redis
          ? `Redis: a redis-server of the benchmark's own (no persistence), emptied before each Redis side; with 2 instances stream s is published on instance s % 2 and each stream's subscribers are split over both. `
          : '') +
        `Latency: publisher's send to the subscriber's receive. Missing/duplicated also checks misrouted posts, lost connections and missing acks (met only when all are 0 in every run). ` +
        `Server CPU from /proc (10 ms ticks), first publish to last ack. All processes share the machine's cores.`,
      config,
      summary: s,
      runs: results,
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await redis?.stop();
    await seedFile.remove();
  }
}
