/** What the bare `ws` servers (the baselines) share: saying where they listen, and stopping. */

/**
 * Prints `listening on ws://127.0.0.1:PORT` once `wss` is bound, like
 * `stream-posts serve --quiet`; on SIGTERM or SIGINT terminates the sockets
 * of `sockets` (a live collection) and exits once `wss` is closed.
 */
export function announceAndStopOnSignal(wss, sockets) {
  wss.on('listening', () => {
    process.stdout.write(`listening on ws://127.0.0.1:${wss.address().port}\n`);
  });
  const stop = () => {
    for (const ws of sockets) ws.terminate();
    wss.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/**
 * A bare `ws` server on a free loopback port (no compression, 1 MiB frames, like serve)
 * that keeps its sockets, drops one that errs, hands each new one to `onConnection`, and
 * announces itself and stops as `announceAndStopOnSignal` says.
 */
export async function startBareServer(onConnection) {
  const { WebSocketServer } = await import('ws');
  const sockets = new Set();
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: 1024 * 1024,
  });
  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    ws.on('error', () => ws.terminate());
    onConnection(ws);
  });
  announceAndStopOnSignal(wss, sockets);
}

const TEXT = { binary: false };
const corked = new WeakSet();

function uncork(ws) {
  corked.delete(ws);
  ws._socket?.uncork();
}

/**
 * Sends `frame` as a text frame on `ws`. Started with `--cork`, the bare server batches
 * writes as `serve` does: the socket is corked on the first frame of an event-loop turn
 * and uncorked in `process.nextTick`, so what one turn writes to a socket is one system
 * call. Without it every frame is its own write, as a plain `ws` server does.
 */
export const sendText = process.argv.includes('--cork')
  ? (ws, frame) => {
      if (!corked.has(ws) && ws._socket) {
        corked.add(ws);
        ws._socket.cork();
        process.nextTick(uncork, ws);
      }
      ws.send(frame, TEXT);
    }
  : (ws, frame) => ws.send(frame, TEXT);
