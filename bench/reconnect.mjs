/**
 * bench/reconnect — a reconnect storm: `clients` subscribers (2,000) of one stream on the
 * first of two `serve` instances sharing a Redis store of the benchmark's own. That
 * instance is killed (SIGKILL, as a crash) and started again on its port; meanwhile
 * `outagePosts` posts (20) are published on the other instance. The moment the restarted
 * instance listens, every subscriber reconnects at once (no backoff: the worst case a
 * client's jitter spreads out) and subscribes again with `lastPosts` 100, its replay.
 *
 * Reports the time from the restarted instance listening to the last subscriber holding
 * every post of the outage, the p50/p99 of that time per subscriber, the restarted
 * instance's CPU over the storm, reconnections that failed (closed or refused: must be 0)
 * and outage posts a subscriber never got (must be 0). The subscribers live in this
 * process (it does little besides); the servers run with `--rate-limit 0` and
 * `--max-connections-per-key 0`, the one reader key being shared by all subscribers.
 *
 * Flags (through bench/run.mjs): --clients (2000), --outage-posts (20), --runs (1),
 * --timeout-ms (30000: a subscriber not caught up by then counts as missing posts).
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import { WebSocket } from 'ws';
import { readFlags, requireWhole } from './lib/config.mjs';
import { startStreamPosts } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, median, percentile, round } from './lib/stats.mjs';

const DEFAULTS = { clients: 2000, outagePosts: 20, runs: 1, timeoutMs: 30_000 };
const STREAM_ID = 'storm';
const READER_KEY = 'sp_bench_reader_key';
const STREAM_KEY = 'sp_bench_stream_key';
const SEED = {
  users: [
    { id: 'bench-reader', name: 'Bench reader', readerKey: READER_KEY, follows: [STREAM_ID] },
    { id: 'newsdesk', name: 'Newsdesk (author)', readerKey: 'sp_bench_newsdesk_key', follows: [] },
  ],
  streams: [{ id: STREAM_ID, name: 'Storm', owner: 'newsdesk', key: STREAM_KEY }],
};
const OPEN_FLAGS = ['--rate-limit', '0', '--max-connections-per-key', '0'];

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * A subscriber: connects, subscribes with `lastPosts`, and records the ids of the posts it
 * gets. Resolves `ready` on `sub_ack`; `closed` when the connection ends.
 */
function subscriber(url, lastPosts, seen) {
  const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': READER_KEY } });
  const client = { ws, failed: false };
  client.ready = new Promise((resolve, reject) => {
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString());
      if (message.event === 'connected')
        ws.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: STREAM_ID, lastPosts } }));
      else if (message.event === 'sub_ack') resolve();
      else if (message.event === 'stream.post.created') seen(message.data.id);
      else if (message.event === 'error') reject(new Error(message.data?.code ?? 'error'));
    });
    ws.once('close', (code) => reject(new Error(`closed with ${code}`)));
    ws.on('error', reject);
  });
  client.ready.catch(() => {
    client.failed = true;
  });
  client.closed = once(ws, 'close');
  return client;
}

async function publish(ws, text) {
  const requestId = `p${Math.random().toString(36).slice(2)}`;
  ws.send(
    JSON.stringify({
      event: 'add-stream-post',
      requestId,
      data: { streamId: STREAM_ID, content: text, contentType: 'rawtext' },
    }),
  );
  for (;;) {
    const [data] = await once(ws, 'message');
    const message = JSON.parse(data.toString());
    if (message.requestId !== requestId) continue;
    if (message.event !== 'ack') throw new Error(`publish failed: ${data}`);
    return message.data.post.id;
  }
}

async function storm(config, seedPath, redis, log) {
  await redis.flush();
  const port = await freePort();
  const flags = ['--seed', seedPath, '--store', redis.url, ...OPEN_FLAGS];
  let restarted = await startStreamPosts([...flags, '--port', String(port)]);
  const other = await startStreamPosts(flags);
  const publisher = new WebSocket(`${other.url}/v1/ws`, { headers: { 'x-api-key': STREAM_KEY } });
  try {
    await once(publisher, 'open');
    const url = restarted.url;
    const first = Array.from({ length: config.clients }, () => subscriber(url, 0, () => {}));
    await Promise.all(first.map((client) => client.ready));
    log(`  ${config.clients} subscribers ready on the first instance`);

    restarted.child.kill('SIGKILL');
    await Promise.all(first.map((client) => client.closed));
    const outage = [];
    for (let i = 0; i < config.outagePosts; i++) outage.push(await publish(publisher, `outage ${i}`));

    const missingOf = Array.from({ length: config.clients }, () => new Set(outage));
    const doneAt = new Array(config.clients).fill(undefined);
    let done = 0;
    let allDone;
    const finished = new Promise((resolve) => (allDone = resolve));
    restarted = await startStreamPosts([...flags, '--port', String(port)]);
    const listeningAt = performance.now();
    const cpuBefore = restarted.cpuTimeMs();
    const again = missingOf.map((missing, i) =>
      subscriber(url, 100, (id) => {
        if (!missing.delete(id) || missing.size > 0) return;
        doneAt[i] = performance.now() - listeningAt;
        if (++done === config.clients) allDone();
      }),
    );
    const timeout = new Promise((resolve) => setTimeout(resolve, config.timeoutMs).unref());
    await Promise.race([finished, timeout]);
    const stormMs = performance.now() - listeningAt;
    const cpuMs = restarted.cpuTimeMs() - cpuBefore;
    await Promise.allSettled(again.map((client) => client.ready));
    const failed = again.filter((client) => client.failed).length;
    const missing = missingOf.reduce((sum, set) => sum + set.size, 0);
    for (const client of again) client.ws.terminate();
    const times = doneAt.filter((at) => at !== undefined).sort((a, b) => a - b);
    return {
      stormMs: round(done === config.clients ? Math.max(...times) : stormMs, 4),
      p50Ms: round(percentile(times, 50), 3),
      p99Ms: round(percentile(times, 99), 3),
      cpuMs: round(cpuMs, 3),
      failed,
      missing,
    };
  } finally {
    publisher.terminate();
    await Promise.all([restarted.stop(), other.stop()]);
  }
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS);
  requireWhole(config, ['clients', 'outagePosts', 'runs', 'timeoutMs']);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seed = await writeSeed('reconnect', SEED);
  const redis = await startRedis();
  try {
    const runs = [];
    for (let i = 0; i < config.runs; i++) {
      const result = await storm(config, seed.path, redis, log);
      log(
        `  run ${i + 1}/${config.runs}: all back in ${result.stormMs} ms (p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms)` +
          `  restarted instance CPU ${result.cpuMs} ms  failed ${result.failed}  missing ${result.missing}`,
      );
      runs.push(result);
    }
    const med = (key) => median(runs.map((run) => run[key]));
    const failed = runs.reduce((sum, run) => sum + run.failed, 0);
    const missing = runs.reduce((sum, run) => sum + run.missing, 0);
    const name = `${config.clients} subscribers`;
    return {
      name: 'reconnect',
      figures: [
        comparison(null, `${name}: restart to all caught up`, 'ms', med('stormMs'), null),
        comparison(null, `${name}: per subscriber p50 / p99`, 'ms', `${med('p50Ms')} / ${med('p99Ms')}`, null),
        comparison(null, `${name}: restarted instance CPU over the storm`, 'ms', med('cpuMs'), null),
        {
          ...comparison(null, 'failed reconnections (all runs)', 'connections', failed, null),
          target: '0',
          met: failed === 0,
        },
        {
          ...comparison(null, 'outage posts missed (all runs)', 'posts', missing, null),
          target: '0',
          met: missing === 0,
        },
      ],
      notes:
        `${config.clients} subscribers of one stream on one of two serve instances on one Redis; that instance killed (SIGKILL) and restarted on its port ` +
        `while ${config.outagePosts} posts are published on the other; every subscriber reconnects the moment it listens (no backoff) with lastPosts 100. ` +
        `Times from the restart listening to a subscriber holding every outage post; median of ${config.runs} run(s). Subscribers in the benchmark process.`,
      config,
      runs,
    };
  } finally {
    await redis.stop();
    await seed.remove();
  }
}
