/**
 * The baseline of bench/fanout: a bare `ws` server with none of stream-posts'
 * work (no auth, no commands, no store, no backpressure checks). Subscribers
 * connect to `/`; a publisher on `/control` sends already-serialized post
 * frames, and each one is written as-is to every subscriber with
 * `client.send(frame)` (as a text frame, like stream-posts sends), then acked.
 * With `--cork`, writes are batched per event-loop turn as serve does (lib/bare-server.mjs).
 *
 * Prints `listening on ws://127.0.0.1:PORT` once bound, like `stream-posts serve --quiet`.
 */
import { WebSocketServer } from 'ws';
import { announceAndStopOnSignal, sendText } from './lib/bare-server.mjs';

const CONNECTED = Buffer.from(
  JSON.stringify({
    event: 'connected',
    data: { message: 'connected', userId: 'bench-reader', streams: ['macro-wire'] },
  }),
);
const ACK = Buffer.from(JSON.stringify({ event: 'ack', data: { duplicate: false } }));

const subscribers = new Set();
const wss = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  clientTracking: false,
  perMessageDeflate: false,
  maxPayload: 1024 * 1024,
});

wss.on('connection', (ws, req) => {
  ws.on('error', () => ws.terminate());
  if (req.url === '/control') {
    ws.on('message', (frame) => {
      for (const client of subscribers) sendText(client, frame);
      sendText(ws, ACK);
    });
    return;
  }
  subscribers.add(ws);
  ws.on('close', () => subscribers.delete(ws));
  sendText(ws, CONNECTED);
});

announceAndStopOnSignal(wss, subscribers);
