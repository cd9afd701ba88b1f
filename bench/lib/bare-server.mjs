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
