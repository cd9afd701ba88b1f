/**
 * The baseline of bench/connections: a bare `ws` server holding idle
 * subscribers, with none of stream-posts' work (no auth, no store, no rate
 * limit, no keep-alive). It is built like `stream-posts serve`: an HTTP server
 * whose upgrades go to a `noServer` WebSocketServer with the same options
 * (no client tracking, no permessage-deflate, 1 MiB frames).
 *
 * A client connecting to `/` gets the same `connected` frame as the benchmark
 * seed's reader gets from stream-posts (its userId and the followed streams,
 * `--streams=N`, named as bench/connections names them). Each frame it sends
 * is read as a subscribe command, `{"event":…,"data":{"streamIds":"a,b"}}`:
 * the socket joins a set per stream and gets a `sub_ack` of the stream-posts
 * shape. `GET /state` answers `{"connections":N,"subscriptions":M}`, like
 * stream-posts' `GET /_admin/state`.
 *
 *   node bench/idle-ws-server.mjs --streams=100 --user=bench-reader
 *
 * Prints `listening on ws://127.0.0.1:PORT` once bound, like `stream-posts serve --quiet`.
 */
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const flags = Object.fromEntries(
  process.argv.slice(2).map((arg) => {
    const match = /^--([\w-]+)=(.*)$/.exec(arg);
    if (!match) throw new Error(`unexpected argument ${arg}`);
    return [match[1], match[2]];
  }),
);
const streamCount = Number(flags.streams ?? 100);
const userId = flags.user ?? 'bench-reader';
const streamIds = Array.from({ length: streamCount }, (_, i) => `s${String(i).padStart(3, '0')}`);

const CONNECTED = Buffer.from(
  JSON.stringify({ event: 'connected', data: { message: 'connected', userId, streams: streamIds } }),
);
const TEXT_FRAME = { binary: false };

/** Stream id → the sockets subscribed to it. */
const byStream = new Map(streamIds.map((id) => [id, new Set()]));
let connections = 0;
let subscriptions = 0;

/** Runs a subscribe command of `ws`, whose subscriptions so far are `held`. */
function subscribe(ws, held, frame) {
  const command = JSON.parse(frame.toString('utf8'));
  const ids = String(command.data?.streamIds ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => byStream.has(id));
  for (const id of ids) {
    byStream.get(id).add(ws);
    held.streams.add(id);
  }
  held.commands += 1;
  subscriptions += 1;
  const ack = { event: 'sub_ack', data: { command: command.event, streamIds: ids, lastPosts: 0 } };
  ws.send(JSON.stringify(ack), TEXT_FRAME);
}

const http = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/state') {
    const body = JSON.stringify({ connections, subscriptions });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  res.writeHead(404, { 'content-length': 0 });
  res.end();
});
const wss = new WebSocketServer({
  noServer: true,
  clientTracking: false,
  perMessageDeflate: false,
  maxPayload: 1024 * 1024,
});

http.on('upgrade', (req, socket, head) => {
  socket.on('error', () => socket.destroy());
  wss.handleUpgrade(req, socket, head, (ws) => {
    const held = { streams: new Set(), commands: 0 };
    connections += 1;
    ws.on('error', () => ws.terminate());
    ws.on('message', (frame) => {
      try {
        subscribe(ws, held, frame);
      } catch {
        ws.close(1003, 'not a subscribe command');
      }
    });
    ws.on('close', () => {
      connections -= 1;
      subscriptions -= held.commands;
      for (const id of held.streams) byStream.get(id).delete(ws);
    });
    ws.send(CONNECTED, TEXT_FRAME);
  });
});

http.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on ws://127.0.0.1:${http.address().port}\n`);
});

// The benchmark closes its clients first; whatever is left goes with the process.
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
