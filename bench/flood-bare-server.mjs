/**
 * The baseline of bench/flood: a bare `ws` server that does the least a server that answers
 * every frame can do — sends `connected` on connection, parses each text frame with
 * JSON.parse and replies an `error` event to one that is not JSON. No auth, no rate limit.
 *
 * Prints `listening on ws://127.0.0.1:PORT` once bound, like `stream-posts serve --quiet`.
 */
import { startBareServer } from './lib/bare-server.mjs';

const CONNECTED = Buffer.from(
  JSON.stringify({ event: 'connected', data: { message: 'connected', userId: 'alice', streams: [] } }),
);

await startBareServer((ws) => {
  ws.on('message', (data) => {
    try {
      JSON.parse(data.toString('utf8'));
    } catch {
      ws.send(JSON.stringify({ event: 'error', data: { code: 'bad-json', message: 'the frame is not valid JSON' } }), {
        binary: false,
      });
    }
  });
  ws.send(CONNECTED, { binary: false });
});
