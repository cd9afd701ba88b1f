/**
 * bench/fanout — one stream, 1,000 subscribers: deliveries per second and
 * publish-to-delivery latency of `stream-posts serve`, side by side with a bare
 * `ws` server (bench/bare-ws-server.mjs) that broadcasts the same frames to
 * the same 1,000 clients, twice: with writes corked per event-loop turn as serve
 * does (the baseline of the target) and frame by frame (a plain `ws` server).
 * With --store=redis, serve on a Redis store of the benchmark's own is a side
 * too, against the memory store, with Redis commands and bytes per post; with
 * --instances=2 also two serve instances on that Redis (a keyspace of their
 * own), the post published on the first and each subscriber process's clients
 * on one instance in turn, so half the deliveries cross Redis.
 * Target: at least 80% of the corked bare server's deliveries/s.
 *
 * Processes: `stream-posts serve` (the built CLI), the bare server, and two
 * subscriber processes (bench/fanout-client.mjs) each holding half of the
 * clients of both servers; this process publishes. So each server has a
 * process to itself and the measuring side is the same for both.
 *
 * Pacing, the same for both servers: posts are published back to back while
 * fewer than `window` of them are still on their way to some subscriber (a
 * closed loop on delivery, not on the publish ack, so a server cannot run
 * ahead of its clients by queueing frames in socket buffers). A run's
 * deliveries/s is every delivery divided by the time from its first publish
 * to its last delivery. Runs alternate between the two servers; each figure
 * is the median of `runs` runs.
 *
 * Flags (through bench/run.mjs): --seconds, --warmup-seconds, --runs, --window,
 * --clients, --workers, --content-bytes, --posts (cap per run), --store
 * (memory; redis adds the Redis side), --instances (1; 2 adds the two-instance
 * side), and
 * --profile[=DIR] to have both servers write a .cpuprofile (read it with
 * bench/profile-summary.mjs).
 */
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { ClientProcess } from './lib/client-process.mjs';
import { now, timedContent } from './lib/clock.mjs';
import { profileArgs, readFlags, requireWhole } from './lib/config.mjs';
import { REPO_ROOT, asOne, cpuTimeMs, startServerProcess, startStreamPosts } from './lib/processes.mjs';
import { openPublisher } from './lib/publisher.mjs';
import { perUnit, startRedis } from './lib/redis.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, median, medianOf, percentile, round, sortedConcat, sumOf } from './lib/stats.mjs';

const DEFAULTS = {
  clients: 1000,
  workers: 2,
  /** Publishing time of a measured run (then the posts on their way are awaited). */
  seconds: 4,
  warmupSeconds: 3,
  /** At most this many posts per run (subscriber processes allocate for it). */
  posts: 5000,
  runs: 3,
  window: 8,
  contentBytes: 200,
  stallMs: 10_000,
  target: 0.8,
  /** With --store=redis: 2 adds a side of two instances on the one Redis. */
  instances: 1,
};

const STREAM_ID = 'macro-wire';
const READER_KEY = 'sp_bench_reader_key';
const STREAM_KEY = 'sp_bench_stream_key';
const SEED = {
  users: [
    { id: 'bench-reader', name: 'Bench reader', readerKey: READER_KEY, follows: [STREAM_ID] },
    { id: 'newsdesk', name: 'Newsdesk (author)', readerKey: 'sp_bench_newsdesk_key', follows: [] },
  ],
  streams: [{ id: STREAM_ID, name: 'Macro Wire', owner: 'newsdesk', key: STREAM_KEY }],
};

/** Starts the header of post content, which the subscribers read (see fanout-client.mjs). */
const MARK = 'bench:';

function parseConfig(flags) {
  // --profile: both servers write a V8 CPU profile (.cpuprofile) when they stop.
  const config = readFlags(flags, DEFAULTS, { profile: true });
  requireWhole(config, ['clients', 'workers', 'posts', 'runs', 'window', 'contentBytes', 'instances']);
  config.store = flags?.store ?? 'memory';
  if (!['memory', 'redis'].includes(config.store))
    throw new RangeError(`--store must be memory or redis, got "${config.store}"`);
  if (config.instances !== 1 && (config.instances !== 2 || config.store !== 'redis'))
    throw new RangeError(`--instances must be 1, or 2 with --store=redis, got ${config.instances}`);
  if (config.clients % config.workers !== 0) throw new RangeError('--clients must be a multiple of --workers');
  if (config.posts >= 1e6) throw new RangeError('--posts must be below 1,000,000');
  if (config.contentBytes < 64)
    throw new RangeError('--content-bytes must be at least 64 (the header the subscribers read)');
  if (config.clients / config.workers >= 65536) throw new RangeError('at most 65,535 clients per subscriber process');
  return config;
}

/**
 * One side of the comparison: a server process, a publisher connection, and
 * how a post becomes the message the publisher sends.
 */
async function ourSide(seedPath, config, redis, instances = 1) {
  const servers = [];
  try {
    for (let i = 0; i < instances; i++) servers.push(await startOurs(seedPath, config, redis, instances));
  } catch (error) {
    await asOne(servers).stop();
    throw error;
  }
  const server = asOne(servers);
  const urls = servers.map((one) => `${one.url}/v1/ws`);
  const publisher = await openPublisher(urls[0], { 'x-api-key': STREAM_KEY }).catch(async (error) => {
    await server.stop();
    throw error;
  });
  const target = instances === 2 ? 'redis2' : redis ? 'redis' : 'ours';
  return {
    target,
    label: { ours: 'serve (memory)', redis: 'serve (redis)', redis2: 'serve (redis) ×2' }[target],
    redis,
    lost: 0,
    server,
    publisher,
    subscriberUrl: urls[0],
    // Subscriber process i connects to instance i % instances.
    subscriberUrls: urls,
    subscriberHeaders: { 'x-api-key': READER_KEY },
    subscribe: JSON.stringify({ event: 'on-stream-post', data: { streamIds: STREAM_ID } }),
    message: (text) =>
      JSON.stringify({
        event: 'add-stream-post',
        data: { streamId: STREAM_ID, content: text, contentType: 'rawtext' },
      }),
  };
}

/** One `serve` process; the two-instance side uses a keyspace of its own on the one Redis. */
function startOurs(seedPath, config, redis, instances) {
  return startStreamPosts(
    [
      '--seed',
      seedPath,
      ...(redis ? ['--store', redis.url] : []),
      ...(instances === 2 ? ['--redis-prefix', 'stream-posts-2:'] : []),
      '--rate-limit',
      '0',
      '--max-connections-per-key',
      '0',
      // A plain byte count: the size is what matters, not how a unit is spelled.
      '--max-buffered',
      String(64 * 1024 * 1024),
    ],
    {
      nodeArgs: profileArgs(
        config,
        instances === 2 ? 'stream-posts-redis2' : redis ? 'stream-posts-redis' : 'stream-posts',
      ),
    },
  );
}

/** The bare broadcast server; `cork` batches its writes per event-loop turn as serve does. */
async function bareSide(config, cork) {
  const target = cork ? 'bare' : 'plain';
  const server = await startServerProcess(
    process.execPath,
    [join(REPO_ROOT, 'bench', 'bare-ws-server.mjs'), ...(cork ? ['--cork'] : [])],
    {
      name: `bare ws server${cork ? ' (corked)' : ''}`,
      nodeArgs: profileArgs(config, `bare-ws-${target}`),
    },
  );
  const publisher = await openControl(`${server.url}/control`).catch(async (error) => {
    await server.stop();
    throw error;
  });
  return {
    target,
    label: cork ? 'bare ws (corked)' : 'bare ws (plain)',
    lost: 0,
    server,
    // The control connection hears nothing until it sends; it is ready once open.
    publisher,
    subscriberUrl: `${server.url}/`,
    subscriberHeaders: {},
    subscribe: undefined,
    /** Set from a frame captured from stream-posts: the same bytes around the content. */
    message: undefined,
  };
}

function openControl(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once('error', reject);
    ws.once('open', () => resolve(ws));
  });
}

/** Builds the bare server's message from a real `stream.post.created` frame of stream-posts. */
function frameTemplate(frame, contentBytes) {
  const at = frame.indexOf(MARK);
  const parsed = JSON.parse(frame);
  if (at < 0 || parsed.event !== 'stream.post.created')
    throw new Error(`unexpected captured frame: ${frame.slice(0, 200)}`);
  const prefix = frame.slice(0, at);
  const suffix = frame.slice(at + contentBytes);
  return (text) => prefix + text + suffix;
}

/**
 * Publishes on one side for `seconds` (at most `config.posts` posts), waits
 * for every post to reach every subscriber, and resolves to the run's figures.
 */
async function measure(side, clients, config, run, seconds, { capture = false } = {}) {
  const { publisher, server } = side;
  const capacity = config.posts;
  const exit = server.exitStatus();
  if (exit || publisher.readyState !== WebSocket.OPEN) {
    const how = exit ? `exited (code ${exit.code}, signal ${exit.signal})` : 'closed the publisher connection';
    const stderr = server.stderr().trim();
    throw new Error(`${side.label} ${how} before run ${run}${stderr ? `:\n${stderr}` : ''}`);
  }
  await Promise.all(
    clients.map((client) =>
      client.request({
        type: 'arm',
        target: side.target,
        run,
        posts: capacity,
        capture: capture && client.index === 0,
      }),
    ),
  );

  return new Promise((resolve, reject) => {
    const workersDone = new Uint8Array(capacity);
    const reports = [];
    let publishing = true;
    let collecting = false;
    let published = 0;
    let completed = 0;
    let acks = 0;
    const lostBefore = side.lost;
    let firstPublishAt = 0;
    let lastProgressAt = performance.now();
    let finished = false;
    let captured;
    const cpuBefore = server.cpuTimeMs();
    const cpusBefore = server.cpuTimesMs?.();

    const publishMore = () => {
      if (publishing && published > 0 && (published >= capacity || now() - firstPublishAt >= seconds * 1000))
        publishing = false;
      while (publishing && published < capacity && published - completed < config.window) {
        const seq = published++;
        if (seq === 0) firstPublishAt = now();
        publisher.send(side.message(timedContent(MARK, run, seq, config.contentBytes)));
      }
      if (!publishing && completed === published) collect();
    };
    const onPublisherMessage = (data) => {
      const text = data.toString('utf8');
      if (text.includes('"event":"ack"')) acks += 1;
      else if (text.includes('"event":"error"')) finish(new Error(`${side.label} refused a post: ${text}`));
    };
    const onPublisherClose = (code) => finish(new Error(`${side.label} closed the publisher connection (${code})`));
    const collect = () => {
      if (collecting) return;
      collecting = true;
      clients.forEach((client) => client.send({ type: 'collect', target: side.target }));
      setTimeout(() => finish(new Error('the subscriber processes did not report')), config.stallMs).unref();
    };
    const watchdog = setInterval(() => {
      if (performance.now() - lastProgressAt > config.stallMs) {
        clearInterval(watchdog);
        publishing = false;
        collect();
      }
    }, 250);

    const finish = (error) => {
      if (finished) return;
      finished = true;
      clearInterval(watchdog);
      publisher.off('message', onPublisherMessage);
      publisher.off('close', onPublisherClose);
      if (error) {
        reject(error);
        return;
      }
      const cpuMs = server.cpuTimeMs() - cpuBefore;
      const deliveries = sumOf(reports, 'distinct');
      // Several instances: what each spent, to see what one more core would carry.
      const perInstance = cpusBefore?.length > 1 ? server.cpuTimesMs().map((ms, i) => ms - cpusBefore[i]) : null;
      const posts = published;
      const expected = posts * config.clients;
      const lastDeliveryAt = Math.max(...reports.map((report) => report.lastAt));
      const elapsedMs = lastDeliveryAt - firstPublishAt;
      const latencies = sortedConcat(reports.map((report) => report.latencies));
      resolve({
        run,
        posts,
        deliveries,
        missing: expected - deliveries,
        duplicates: sumOf(reports, 'duplicates'),
        stale: sumOf(reports, 'stale'),
        lostConnections: side.lost - lostBefore,
        acks,
        elapsedMs: deliveries > 0 ? round(elapsedMs, 4) : null,
        deliveriesPerSecond: deliveries > 0 ? Math.round((deliveries / elapsedMs) * 1000) : 0,
        p50Ms: round(percentile(latencies, 50), 3),
        p99Ms: round(percentile(latencies, 99), 3),
        maxMs: round(percentile(latencies, 100), 3),
        serverCpuMsPer1kDeliveries:
          Number.isFinite(cpuMs) && deliveries > 0 ? round((cpuMs / deliveries) * 1000, 3) : null,
        instanceCpuMsPer1kDeliveries:
          perInstance && deliveries > 0 ? perInstance.map((ms) => round((ms / deliveries) * 1000, 3)) : null,
        serverRssMiB: server.rssMiB() ?? null,
        captured,
      });
    };

    for (const client of clients) {
      client.on('delivered', (message) => {
        if (message.target !== side.target || message.run !== run) return;
        lastProgressAt = performance.now();
        if (++workersDone[message.seq] === clients.length) {
          completed += 1;
          publishMore();
        }
      });
      client.on('report', (message) => {
        if (message.target !== side.target || message.run !== run) return;
        reports.push(message);
        if (reports.length === clients.length) finish();
      });
      client.on('captured', (message) => {
        captured = message.frame;
      });
    }
    publisher.on('message', onPublisherMessage);
    publisher.once('close', onPublisherClose);
    publishMore();
  });
}

function summarize(runs) {
  return {
    deliveriesPerSecond: medianOf(runs, 'deliveriesPerSecond'),
    p50Ms: medianOf(runs, 'p50Ms'),
    p99Ms: medianOf(runs, 'p99Ms'),
    serverCpuMsPer1kDeliveries: medianOf(runs, 'serverCpuMsPer1kDeliveries'),
    // Of the run whose total is the median, so the parts add up to it.
    instanceCpuMsPer1kDeliveries:
      runs.find((r) => r.serverCpuMsPer1kDeliveries === medianOf(runs, 'serverCpuMsPer1kDeliveries'))
        ?.instanceCpuMsPer1kDeliveries ?? null,
    missing: sumOf(runs, 'missing'),
    duplicates: sumOf(runs, 'duplicates'),
    lostConnections: sumOf(runs, 'lostConnections'),
    redisCpuMsPer1kDeliveries: runs[0]?.redisPerPost ? medianOf(runs, 'redisCpuMsPer1kDeliveries') : null,
    redisCommandsPerPost: runs[0]?.redisPerPost ? median(runs.map((r) => r.redisPerPost.commands)) : null,
    redisBytesPerPost: runs[0]?.redisPerPost ? median(runs.map((r) => r.redisPerPost.bytes)) : null,
  };
}

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seed = await writeSeed('fanout', SEED);

  const sides = [];
  const clients = [];
  let redis;
  try {
    if (config.store === 'redis') redis = await startRedis();
    sides.push(await ourSide(seed.path, config));
    if (redis) sides.push(await ourSide(seed.path, config, redis));
    if (redis && config.instances === 2) sides.push(await ourSide(seed.path, config, redis, 2));
    sides.push(await bareSide(config, true), await bareSide(config, false));
    const [ours] = sides;
    const bares = sides.filter((side) => side.target === 'bare' || side.target === 'plain');
    for (let i = 0; i < config.workers; i++)
      clients.push(new ClientProcess(join(REPO_ROOT, 'bench', 'fanout-client.mjs'), i));
    for (const client of clients) {
      client.on('lost', (message) => {
        const side = sides.find((candidate) => candidate.target === message.target);
        side.lost += 1;
        // 1, 10, 100, 1000: enough to see it happen without a line per socket.
        if (Number.isInteger(Math.log10(side.lost)))
          log(`  ${side.label}: ${side.lost} subscriber(s) lost; last close code ${message.code}`);
      });
    }
    const perProcess = config.clients / config.workers;
    for (const side of sides) {
      const started = performance.now();
      await Promise.all(
        clients.map((client, i) =>
          client.request({
            type: 'connect',
            target: side.target,
            url: side.subscriberUrls ? side.subscriberUrls[i % side.subscriberUrls.length] : side.subscriberUrl,
            headers: side.subscriberHeaders,
            subscribe: side.subscribe,
            count: perProcess,
          }),
        ),
      );
      log(`  ${side.label}: ${config.clients} subscribers ready in ${Math.round(performance.now() - started)} ms`);
    }

    let runId = 1;
    // Warm-up: lets both processes optimize their hot paths, and gives the real
    // frame the bare server is to send.
    const warmOurs = await measure(ours, clients, config, runId++, config.warmupSeconds, { capture: true });
    if (!warmOurs.captured) throw new Error('no stream.post.created frame was captured from stream-posts');
    const oursFrameBytes = Buffer.byteLength(warmOurs.captured);
    for (const bare of bares) {
      bare.message = frameTemplate(warmOurs.captured, config.contentBytes);
      const bareFrameBytes = Buffer.byteLength(bare.message(timedContent(MARK, 0, 0, config.contentBytes)));
      if (oursFrameBytes !== bareFrameBytes)
        throw new Error(`frame sizes differ: ${oursFrameBytes} vs ${bareFrameBytes}`);
    }
    const warm = [];
    for (const side of sides.slice(1))
      warm.push((await measure(side, clients, config, runId++, config.warmupSeconds)).posts);
    log(`  warmed up (${[warmOurs.posts, ...warm].join(', ')} posts; frame ${oursFrameBytes} bytes)`);

    const results = Object.fromEntries(sides.map((side) => [side.target, []]));
    for (let i = 0; i < config.runs; i++) {
      // Each run starts with the next side, so drift over time favours none.
      const order = sides.map((_, k) => sides[(k + i) % sides.length]);
      for (const side of order) {
        const redisBefore = side.redis && (await side.redis.counters());
        const redisCpuBefore = side.redis && cpuTimeMs(side.redis.pid);
        const result = await measure(side, clients, config, runId++, config.seconds);
        delete result.captured;
        if (side.redis) {
          result.redisPerPost = perUnit(redisBefore, await side.redis.counters(), result.posts);
          result.redisCpuMsPer1kDeliveries = round(
            ((cpuTimeMs(side.redis.pid) - redisCpuBefore) / result.deliveries) * 1000,
            3,
          );
        }
        results[side.target].push(result);
        log(
          `  run ${i + 1}/${config.runs} ${side.label.padEnd(18)} ${String(result.posts).padStart(5)} posts ${String(result.deliveriesPerSecond).padStart(8)} deliveries/s` +
            `  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms  missing ${result.missing}` +
            `  server CPU ${result.serverCpuMsPer1kDeliveries} ms/1k  RSS ${result.serverRssMiB} MiB`,
        );
      }
    }

    const s = Object.fromEntries(Object.entries(results).map(([target, runs]) => [target, summarize(runs)]));
    const o = s.ours;
    const figures = [];
    for (const [target, baseline] of [
      ['bare', 'bare ws, writes corked per turn'],
      ['plain', 'bare ws, frame by frame'],
    ]) {
      const b = s[target];
      const figure = (...args) => comparison(baseline, ...args);
      const ratio = round(o.deliveriesPerSecond / b.deliveriesPerSecond, 3);
      figures.push(
        figure('memory store: deliveries per second', 'deliveries/s', o.deliveriesPerSecond, b.deliveriesPerSecond, {
          ratio,
          target: `ratio >= ${config.target}`,
          met: ratio >= config.target,
        }),
        figure(
          'memory store: publish-to-delivery p50 / p99',
          'ms',
          `${o.p50Ms} / ${o.p99Ms}`,
          `${b.p50Ms} / ${b.p99Ms}`,
          {
            ratio: round(o.p99Ms / b.p99Ms, 3),
          },
        ),
        figure(
          'memory store: server CPU per 1,000 deliveries',
          'ms',
          o.serverCpuMsPer1kDeliveries,
          b.serverCpuMsPer1kDeliveries,
        ),
      );
    }
    for (const [target, name] of [
      ['redis', 'Redis store'],
      ['redis2', 'Redis store, 2 instances'],
    ]) {
      const r = s[target];
      if (!r) continue;
      const figure = (...args) => comparison('serve, memory store', ...args);
      figures.push(
        figure(`${name}: deliveries per second`, 'deliveries/s', r.deliveriesPerSecond, o.deliveriesPerSecond),
        figure(`${name}: publish-to-delivery p50 / p99`, 'ms', `${r.p50Ms} / ${r.p99Ms}`, `${o.p50Ms} / ${o.p99Ms}`, {
          ratio: round(r.p99Ms / o.p99Ms, 3),
        }),
        figure(
          `${name}: server CPU per 1,000 deliveries${target === 'redis2' ? ' (all instances)' : ''}`,
          'ms',
          r.serverCpuMsPer1kDeliveries,
          o.serverCpuMsPer1kDeliveries,
        ),
        ...(r.instanceCpuMsPer1kDeliveries
          ? [
              comparison(
                null,
                `${name}: server CPU per 1,000 deliveries, each instance`,
                'ms',
                r.instanceCpuMsPer1kDeliveries.join(' / '),
                null,
              ),
            ]
          : []),
        comparison(null, `${name}: redis-server CPU per 1,000 deliveries`, 'ms', r.redisCpuMsPer1kDeliveries, null),
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
    for (const side of sides) {
      const r = s[side.target];
      figures.push({
        ...comparison(
          null,
          `${side.label}: missing / duplicated deliveries`,
          'deliveries',
          `${r.missing} / ${r.duplicates}`,
          null,
        ),
        target: '0',
        met: r.missing === 0 && r.duplicates === 0 && r.lostConnections === 0,
      });
    }
    return {
      name: 'fanout',
      figures,
      notes:
        `${config.clients} subscribers of one stream in ${config.workers} subscriber processes; each server in its own process. ` +
        `Posts (${config.contentBytes}-byte content, ${oursFrameBytes}-byte frame) published back to back for ${config.seconds} s per run ` +
        `while fewer than ${config.window} are undelivered; ` +
        `median of ${config.runs} runs per side, alternating, after a ${config.warmupSeconds} s warm-up each. ` +
        `Deliveries/s = deliveries / (first publish to last delivery). Server CPU from /proc (10 ms ticks).`,
      config,
      summary: s,
      runs: results,
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    for (const side of sides) side.publisher?.terminate();
    await Promise.all(sides.map((side) => side.server.stop()));
    await redis?.stop();
    await seed.remove();
  }
}
