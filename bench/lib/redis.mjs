/**
 * A redis-server of the benchmark's own on a free loopback port (never the machine's
 * 6379), without persistence, and what the benchmarks read from it: the INFO counters
 * that give round trips, bytes and memory per post.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from 'redis';

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** `field:value` lines of an INFO answer as an object (numbers where they are numbers). */
function parseInfo(text) {
  const info = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0 || line.startsWith('#')) continue;
    const value = line.slice(colon + 1);
    info[line.slice(0, colon)] = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  return info;
}

/**
 * Starts `redis-server` and resolves once it accepts connections to
 * `{ url, pid, counters(), usedMemory(), flush(), stop() }`.
 */
export async function startRedis({ timeoutMs = 10_000 } = {}) {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`redis-server not ready within ${timeoutMs} ms`)), timeoutMs);
    const fail = (error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const onData = (chunk) => {
      output += chunk;
      if (!output.includes('Ready to accept connections')) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stdout.resume();
      child.off('exit', onExit);
      resolve();
    };
    const onExit = (code) =>
      fail(new Error(`redis-server exited (${code}) before it was ready: ${output.slice(-500)}`));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', onData);
    child.stderr.resume();
    child.once('error', fail);
    child.once('exit', onExit);
  });
  const url = `redis://127.0.0.1:${port}`;
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return {
    url,
    pid: child.pid,
    /**
     * Commands executed (all, and by name), bytes in and out, and used memory so far.
     * The INFO calls themselves add a few commands and bytes; negligible against thousands of posts.
     */
    async counters() {
      const stats = parseInfo(await client.info('stats'));
      const memory = parseInfo(await client.info('memory'));
      const commandstats = parseInfo(await client.info('commandstats'));
      const byCommand = {};
      let commands = 0;
      for (const [key, value] of Object.entries(commandstats)) {
        const calls = /calls=(\d+)/.exec(String(value));
        if (!calls) continue;
        byCommand[key.replace(/^cmdstat_/, '')] = Number(calls[1]);
        commands += Number(calls[1]);
      }
      return {
        commands,
        byCommand,
        bytesIn: stats.total_net_input_bytes,
        bytesOut: stats.total_net_output_bytes,
        usedMemory: memory.used_memory,
      };
    },
    /** Empties every database (between runs, so each starts from the same keyspace). */
    flush: () => client.flushAll(),
    async stop() {
      await client.quit().catch(() => {});
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timeout = new Promise((resolve) => setTimeout(resolve, 5_000, 'timeout'));
      if ((await Promise.race([exited, timeout])) === 'timeout') {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** `after − before` of two `counters()` readings, per `count` (posts), commands by name included. */
export function perUnit(before, after, count) {
  const per = (a, b) => Math.round(((a - b) / count) * 100) / 100;
  const byCommand = {};
  for (const [name, calls] of Object.entries(after.byCommand)) {
    const delta = calls - (before.byCommand[name] ?? 0);
    if (delta > 0) byCommand[name] = per(calls, before.byCommand[name] ?? 0);
  }
  return {
    commands: per(after.commands, before.commands),
    bytes: per(after.bytesIn + after.bytesOut, before.bytesIn + before.bytesOut),
    usedMemoryBytes: per(after.usedMemory, before.usedMemory),
    byCommand,
  };
}
