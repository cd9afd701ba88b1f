/**
 * bench/recording-size — how large `serve --record` writes a steady feed, against the size
 * of the frames it holds as text. One upstream `serve` (in process, memory store, no rate
 * limit) and one recording proxy of it (`startServer({ record, upstream })`); `subscribers`
 * (5) bots subscribe through the proxy; `posts` (3,600: an hour at one a second) posts of
 * `contentBytes` (200) are published to the upstream directly, each waited on until every
 * subscriber has it. The recording is then saved, and its size compared with the UTF-8 bytes
 * of every frame the bots sent and received. Target: at most 2× those bytes.
 *
 * The posts come faster than one a second, so each event's time offset has fewer digits than
 * an hour's would (at most 7 against 4–6 here): the figure is a few bytes a frame low.
 *
 * Flags (through bench/run.mjs): --posts (3600), --subscribers (5), --content-bytes (200).
 */
import { stat, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { readFlags } from './lib/config.mjs';
import { REPO_ROOT } from './lib/processes.mjs';
import { round } from './lib/stats.mjs';

const DEFAULTS = { posts: 3600, subscribers: 5, contentBytes: 200 };

/** A bot through the proxy: counts the bytes of every frame both ways, and the posts it has. */
function bot(url, key, counts) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': key } });
    const state = { ws, posts: 0 };
    ws.on('error', reject);
    ws.on('message', (data) => {
      const text = String(data);
      counts.bytes += Buffer.byteLength(text);
      const event = JSON.parse(text).event;
      if (event === 'stream.post.created') state.posts += 1;
      if (event === 'sub_ack') resolve(state);
    });
    ws.on('open', () => {
      const command = JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire' } });
      counts.bytes += Buffer.byteLength(command);
      ws.send(command);
    });
  });
}

export async function run({ flags, log }) {
  const { posts, subscribers, contentBytes } = readFlags(flags, DEFAULTS, { whole: true });
  const { startServer } = await import(join(REPO_ROOT, 'dist', 'index.js'));
  const file = join(tmpdir(), `stream-posts-recording-size-${process.pid}.json`);
  const upstream = await startServer({ host: '127.0.0.1', port: 0, rateLimit: 0 });
  const proxy = await startServer({ host: '127.0.0.1', port: 0, record: file, upstream: upstream.url });
  const counts = { bytes: 0 };
  const bots = await Promise.all(
    Array.from({ length: subscribers }, () => bot(proxy.url, upstream.keys.readers['alice'], counts)),
  );
  const publisher = new WebSocket(`${upstream.url}/v1/ws`, {
    headers: { 'x-api-key': upstream.keys.streams['macro-wire'] },
  });
  await new Promise((resolve) => publisher.once('open', resolve));
  const filler = 'x'.repeat(Math.max(0, contentBytes - 40));
  for (let i = 1; i <= posts; i += 1) {
    publisher.send(
      JSON.stringify({
        event: 'add-stream-post',
        data: { streamId: 'macro-wire', content: `post ${i} $BTC ${filler}`, contentType: 'rawtext' },
      }),
    );
    await new Promise((resolve) => {
      const check = () => (bots.every((each) => each.posts >= i) ? resolve() : setImmediate(check));
      check();
    });
    if (i % 600 === 0) log(`  ${i} posts`);
  }
  publisher.close();
  for (const each of bots) each.ws.close();
  await proxy.close();
  await upstream.close();
  const size = (await stat(file)).size;
  await rm(file, { force: true });
  const ratio = size / counts.bytes;
  return {
    name: 'recording-size',
    figures: [
      {
        figure: `a recording of ${posts} posts to ${subscribers} subscribers, against its frames as text`,
        value: round(size / 1_048_576, 2),
        unit: 'MiB',
        baseline: 'the frames the bots sent and received, UTF-8',
        baselineValue: round(counts.bytes / 1_048_576, 2),
        ratio: round(ratio, 2),
        target: 'ratio <= 2',
        met: ratio <= 2,
      },
    ],
    notes: [`${size} bytes of recording for ${counts.bytes} bytes of frames`],
  };
}
