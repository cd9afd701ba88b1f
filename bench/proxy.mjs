/**
 * bench/proxy — what `serve --record` costs a bot, in one run: one upstream
 * `serve` (memory, `--rate-limit 0`) and one recording proxy of it
 * (`serve --record FILE --upstream …`).
 *
 * 1. A frame's way through the proxy: two subscribers of one stream, one
 *    connected to the upstream directly and one through the proxy, get the same
 *    posts, published to the upstream directly at `rate` posts/s for `seconds`
 *    (each post's content carries the time it was sent). The latency of each
 *    side is the time its subscriber sees the post minus that; the proxy adds
 *    the difference. Targets: at most 1 ms more at p50 and 5 ms more at p99.
 * 2. Fan-out: `fanout` subscribers (500) in a client process
 *    (bench/proxy-client.mjs), all on one stream, connected directly or all
 *    through the proxy (sides alternating, `runs` each); `posts` posts are
 *    published as fast as the upstream acknowledges them, and throughput is
 *    deliveries over the time from the first publish to the last delivery.
 *    Target: through the proxy ≥ 0.9× direct.
 *
 * Flags (through bench/run.mjs): --seconds (10), --rate (200), --fanout (500),
 * --posts (200), --runs (3), --content-bytes (200), and --record-max (passed to
 * the proxy: 1 stops recording at once, to measure the proxying alone).
 */
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { WebSocket } from 'ws';
import { ClientProcess } from './lib/client-process.mjs';
import { now, timedContent, timedFields } from './lib/clock.mjs';
import { readFlags, requireWhole } from './lib/config.mjs';
import { REPO_ROOT, startStreamPosts } from './lib/processes.mjs';
import { openPublisher } from './lib/publisher.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, median, percentile, round } from './lib/stats.mjs';

const DEFAULTS = { seconds: 10, rate: 200, fanout: 500, posts: 200, runs: 3, contentBytes: 200 };
const STREAM = 'bench';
const READER = 'sp_proxy_bench_reader';
const STREAM_KEY = 'sp_proxy_bench_stream';
const MARK = 'proxy:';

const SEED = {
  users: [
    { id: 'reader', name: 'Reader', readerKey: READER, follows: [STREAM] },
    { id: 'owner', name: 'Owner', readerKey: 'sp_proxy_bench_owner', follows: [] },
  ],
  streams: [{ id: STREAM, name: STREAM, owner: 'owner', key: STREAM_KEY }],
};

/** One subscriber of the bench stream; `onPost(text)` gets each post's text. */
function subscriber(url, onPost) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': READER }, perMessageDeflate: false });
    ws.once('error', reject);
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString('utf8'));
      if (message.event === 'connected')
        ws.send(JSON.stringify({ event: 'on-stream-post', requestId: 's', data: { streamIds: STREAM } }));
      else if (message.event === 'sub_ack') resolve(ws);
      else if (message.event === 'stream.post.created') onPost(message.data.text);
    });
  });
}

/** Publishes `content(i)` for i below `count`, pipelined, `perTick` every `tickMs`; resolves when all are acked. */
function publish(publisher, count, content, { perTick = count, tickMs = 0 } = {}) {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let acked = 0;
    const onMessage = (data) => {
      const text = data.toString('utf8');
      if (text.includes('"event":"error"')) reject(new Error(`publish refused: ${text}`));
      if (!text.includes('"event":"ack"')) return;
      acked += 1;
      if (acked === count) {
        publisher.off('message', onMessage);
        resolve();
      }
    };
    publisher.on('message', onMessage);
    const tick = () => {
      const upTo = Math.min(count, sent + perTick);
      for (; sent < upTo; sent++)
        publisher.send(
          JSON.stringify({
            event: 'add-stream-post',
            data: { streamId: STREAM, content: content(sent), contentType: 'rawtext' },
          }),
        );
      if (sent < count) setTimeout(tick, tickMs);
    };
    tick();
  });
}

async function latency(config, upstream, proxy) {
  const { timeAt } = timedFields(MARK);
  const sides = { direct: [], proxy: [] };
  const record = (side) => (text) => sides[side].push(now() - Number(text.slice(timeAt, timeAt + 16)) / 1000);
  const direct = await subscriber(upstream.url, record('direct'));
  const proxied = await subscriber(proxy.url, record('proxy'));
  const publisher = await openPublisher(`${upstream.url}/v1/ws`, { 'x-api-key': STREAM_KEY });
  const count = config.rate * config.seconds;
  const tickMs = 10;
  const perTick = Math.max(1, Math.round((config.rate * tickMs) / 1000));
  await publish(publisher, count, (seq) => timedContent(MARK, 1, seq, config.contentBytes), { perTick, tickMs });
  const deadline = Date.now() + 10_000;
  while ((sides.direct.length < count || sides.proxy.length < count) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  for (const ws of [direct, proxied, publisher]) ws.close();
  const sorted = (side) => [...sides[side]].sort((a, b) => a - b);
  const d = sorted('direct');
  const p = sorted('proxy');
  return {
    count,
    missing: { direct: count - d.length, proxy: count - p.length },
    direct: { p50: percentile(d, 50), p99: percentile(d, 99) },
    proxy: { p50: percentile(p, 50), p99: percentile(p, 99) },
  };
}

async function fanoutRun(config, client, url, upstream) {
  await client.request({ type: 'open', url, key: READER, count: config.fanout, streamId: STREAM });
  const publisher = await openPublisher(`${upstream.url}/v1/ws`, { 'x-api-key': STREAM_KEY });
  const started = now();
  const waiting = client.request({ type: 'wait', expected: config.posts });
  await publish(publisher, config.posts, (seq) => `fanout ${seq} ${'x'.repeat(config.contentBytes)}`);
  const { lastAt } = await waiting;
  publisher.close();
  await client.request({ type: 'close' });
  return (config.posts * config.fanout) / ((lastAt - started) / 1000);
}

export async function run({ flags, log }) {
  const config = readFlags(flags, DEFAULTS);
  requireWhole(config, ['seconds', 'rate', 'fanout', 'posts', 'runs', 'contentBytes']);
  const seed = await writeSeed('proxy', SEED);
  const recording = join(tmpdir(), `stream-posts-bench-proxy-${process.pid}.json`);
  const upstream = await startStreamPosts([
    '--seed',
    seed.path,
    '--rate-limit',
    '0',
    '--max-connections-per-key',
    '0',
    '--keep-alive',
    '10m',
  ]);
  const proxy = await startStreamPosts([
    '--record',
    recording,
    '--upstream',
    upstream.url,
    ...(flags?.recordMax ? ['--record-max', flags.recordMax] : []),
  ]);
  const client = new ClientProcess(join(REPO_ROOT, 'bench', 'proxy-client.mjs'), 0);
  try {
    log(`latency: ${config.rate} posts/s for ${config.seconds} s, direct and through the proxy`);
    const lat = await latency(config, upstream, proxy);
    log(`fan-out: ${config.posts} posts to ${config.fanout} subscribers, ${config.runs} runs a side`);
    const rates = { direct: [], proxy: [] };
    for (let i = 0; i < config.runs; i++) {
      for (const side of i % 2 === 0 ? ['direct', 'proxy'] : ['proxy', 'direct']) {
        rates[side].push(await fanoutRun(config, client, side === 'direct' ? upstream.url : proxy.url, upstream));
        log(`  run ${i + 1} ${side}: ${Math.round(rates[side].at(-1))} deliveries/s`);
      }
    }
    const added50 = round(lat.proxy.p50 - lat.direct.p50);
    const added99 = round(lat.proxy.p99 - lat.direct.p99);
    const direct = median(rates.direct);
    const proxied = median(rates.proxy);
    return {
      name: 'proxy',
      config,
      figures: [
        comparison('direct', 'frame latency p50 through the proxy', 'ms', round(lat.proxy.p50), round(lat.direct.p50), {
          target: 'added ≤ 1 ms',
          met: added50 <= 1,
        }),
        comparison('direct', 'frame latency p99 through the proxy', 'ms', round(lat.proxy.p99), round(lat.direct.p99), {
          target: 'added ≤ 5 ms',
          met: added99 <= 5,
        }),
        comparison(
          'direct',
          `fan-out to ${config.fanout} subscribers through the proxy`,
          'deliveries/s',
          Math.round(proxied),
          Math.round(direct),
          {
            target: '≥ 0.9× direct',
            met: proxied >= 0.9 * direct,
          },
        ),
      ],
      notes: [
        `latency: ${lat.count} posts; added by the proxy p50 ${added50} ms, p99 ${added99} ms; missing direct ${lat.missing.direct}, through the proxy ${lat.missing.proxy}`,
        `fan-out: deliveries/s per run, direct ${rates.direct.map(Math.round).join(', ')}; through the proxy ${rates.proxy.map(Math.round).join(', ')}`,
      ],
    };
  } finally {
    await client.close();
    await proxy.stop();
    await upstream.stop();
    await seed.remove();
    const { rm } = await import('node:fs/promises');
    await rm(recording, { force: true });
  }
}
