/**
 * Preloaded into both servers of bench/connections (`node --expose-gc --import
 * ./bench/connections-probe.mjs …`). On SIGUSR2 it runs a full garbage
 * collection and writes one line to stderr,
 *   connections-probe N {"rss":…,"heapTotal":…,"heapUsed":…,"external":…,"arrayBuffers":…}
 * with N counting the signals from 1, so the benchmark can read the live JS
 * heap of a server it did not write.
 */
let reports = 0;

process.on('SIGUSR2', () => {
  globalThis.gc?.();
  reports += 1;
  process.stderr.write(`connections-probe ${reports} ${JSON.stringify(process.memoryUsage())}\n`);
});
