/**
 * The baseline of bench/history: a bare `ws` server holding every post of a
 * seed file (`node bench/history-bare-server.mjs SEED`) already encoded as the
 * `stream.post.created` frame stream-posts would send, per stream. On a
 * subscribe command (`{"event":"on-stream-post","data":{"streamIds":"a,b",
 * "lastPosts":N}}`) it sends a `sub_ack`, then the last N frames of each named
 * stream, stream after stream, as-is. No keys, no store, no sorting.
 *
 * Frames have stream-posts' shape and length: the same fields in the same
 * order, createdAt spaced one minute apart in seed order as stream-posts
 * dates seed posts, and a 26-character id in place of a ULID.
 *
 * With `--cork` (after SEED), writes are batched per event-loop turn as serve does
 * (lib/bare-server.mjs): a whole history is one write.
 *
 * Prints `listening on ws://127.0.0.1:PORT` once bound, like `stream-posts serve --quiet`.
 */
import { readFileSync } from 'node:fs';
import { sendText, startBareServer } from './lib/bare-server.mjs';

const SEED_POST_SPACING_MS = 60_000;

const seed = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const streams = new Map(seed.streams.map((stream) => [stream.id, { name: stream.name, frames: [] }]));
const now = Date.now();
seed.posts.forEach((post, index) => {
  const stream = streams.get(post.streamId);
  const data = {
    id: String(index).padStart(26, '0'),
    streamId: post.streamId,
    streamName: stream.name,
    text: post.content,
    contentType: post.contentType,
    createdAt: new Date(now - (seed.posts.length - index) * SEED_POST_SPACING_MS).toISOString(),
    releaseAt: null,
    hidden: false,
    customTarget: null,
  };
  stream.frames.push(Buffer.from(JSON.stringify({ event: 'stream.post.created', data })));
});

const CONNECTED = Buffer.from(JSON.stringify({ event: 'connected', data: { message: 'connected' } }));
await startBareServer((ws) => {
  ws.on('message', (message) => {
    const { data } = JSON.parse(message.toString('utf8'));
    const ids = String(data.streamIds).split(',');
    const wanted = ids.map((id) => streams.get(id));
    if (wanted.includes(undefined)) {
      sendText(ws, JSON.stringify({ event: 'error', data: { code: 'not-found', message: 'unknown stream' } }));
      return;
    }
    const lastPosts = Number(data.lastPosts);
    sendText(ws, JSON.stringify({ event: 'sub_ack', data: { command: 'on-stream-post', streamIds: ids, lastPosts } }));
    for (const stream of wanted) {
      for (let i = Math.max(stream.frames.length - lastPosts, 0); i < stream.frames.length; i++)
        sendText(ws, stream.frames[i]);
    }
  });
  sendText(ws, CONNECTED);
});
