/**
 * The baseline of bench/latency: a bare `ws` server doing the least that the
 * same clients and publisher need, with none of stream-posts' other work (no
 * keys, no store, no history, no validation, no backpressure checks).
 *
 * - Every connection, on any path, is greeted with a `connected` event.
 * - `{"event":"on-stream-post","data":{"streamIds":"ID"}}` adds the socket to
 *   stream ID's subscribers and is answered with `sub_ack`.
 * - `{"event":"add-stream-post","data":{"streamId","content","contentType"}}`
 *   becomes a post with stream-posts' fields (a 26-character id, the stream
 *   id as stream name, as bench/latency names its streams: frames of the same
 *   size), serialized once as a `stream.post.created` frame and written to
 *   each of the stream's subscribers, then acked to the publisher with the post.
 *
 * With `--cork`, writes are batched per event-loop turn as serve does (lib/bare-server.mjs).
 *
 * Prints `listening on ws://127.0.0.1:PORT` once bound, like `stream-posts serve --quiet`.
 */
import { WebSocketServer } from 'ws';
import { announceAndStopOnSignal, sendText } from './lib/bare-server.mjs';

const CONNECTED = Buffer.from(
  JSON.stringify({ event: 'connected', data: { message: 'connected', userId: 'bench', streams: [] } }),
);

/** Stream id → its subscribers' sockets. */
const subscribers = new Map();
let nextId = 0;

function subscribe(ws, data) {
  const streamId = String(data?.streamIds ?? '');
  let set = subscribers.get(streamId);
  if (!set) {
    set = new Set();
    subscribers.set(streamId, set);
  }
  set.add(ws);
  ws.once('close', () => set.delete(ws));
  sendText(
    ws,
    JSON.stringify({ event: 'sub_ack', data: { command: 'on-stream-post', streamIds: [streamId], lastPosts: 0 } }),
  );
}

function publish(ws, data) {
  const createdAt = new Date().toISOString();
  // A 26-character id, like a ULID.
  const post = {
    id: `BARE${String(nextId++).padStart(22, '0')}`,
    streamId: data.streamId,
    streamName: data.streamId,
    text: data.content,
    contentType: data.contentType,
    createdAt,
    releaseAt: null,
    hidden: false,
    customTarget: null,
  };
  const frame = Buffer.from(JSON.stringify({ event: 'stream.post.created', data: post }));
  for (const client of subscribers.get(data.streamId) ?? []) sendText(client, frame);
  sendText(ws, JSON.stringify({ event: 'ack', data: { post, duplicate: false } }));
}

const wss = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  clientTracking: true,
  perMessageDeflate: false,
  maxPayload: 1024 * 1024,
});

wss.on('connection', (ws) => {
  ws.on('error', () => ws.terminate());
  ws.on('message', (frame) => {
    const command = JSON.parse(frame.toString('utf8'));
    if (command.event === 'add-stream-post') publish(ws, command.data);
    else if (command.event === 'on-stream-post') subscribe(ws, command.data);
  });
  sendText(ws, CONNECTED);
});

announceAndStopOnSignal(wss, wss.clients);
