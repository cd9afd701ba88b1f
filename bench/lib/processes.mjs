/**
 * Child processes for benchmarks: servers that announce `listening on ws://…`
 * on their first stdout line, their CPU time, and a clean stop.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(REPO_ROOT, 'bin', 'stream-posts.js');

let clockTicks;
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU milliseconds a process has used so far (Linux /proc); undefined elsewhere. */
export function cpuTimeMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/** A memory field of a process's /proc status (`VmRSS`, `VmHWM`, …) in KiB (Linux); undefined elsewhere. */
export function statusKiB(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

const toMiB = (kib) => (kib === undefined ? undefined : Math.round(kib / 1024));

/** Resident memory of a process in MiB (Linux /proc); undefined elsewhere. */
export function rssMiB(pid) {
  return toMiB(statusKiB(pid, 'VmRSS'));
}

/** Peak resident memory of a process in MiB (VmHWM, Linux /proc); undefined elsewhere. */
export function peakRssMiB(pid) {
  return toMiB(statusKiB(pid, 'VmHWM'));
}

/**
 * Spawns a server and resolves once it prints its `listening on <url>` line.
 * stderr is kept (last 4 KiB) so a failure can say why.
 */
export function startServerProcess(
  command,
  args,
  { name = command, cwd = REPO_ROOT, timeoutMs = 15_000, nodeArgs = [] } = {},
) {
  const child = spawn(command, [...nodeArgs, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  let exitStatus;
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      exitStatus = { code, signal };
      resolve(exitStatus);
    }),
  );
  return new Promise((resolve, reject) => {
    let stdout = '';
    const fail = (why) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${name}: ${why}${stderr ? `\n${stderr.trim()}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no "listening on" line within ${timeoutMs} ms`), timeoutMs);
    child.once('error', (error) => fail(error.message));
    const onEarlyExit = (code, signal) => fail(`exited early (code ${code}, signal ${signal})`);
    child.once('exit', onEarlyExit);
    child.stdout.setEncoding('utf8');
    const onData = (chunk) => {
      stdout += chunk;
      const match = /listening on (\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onEarlyExit);
      child.stdout.resume();
      resolve({
        name,
        child,
        pid: child.pid,
        url: match[1],
        cpuTimeMs: () => cpuTimeMs(child.pid),
        rssMiB: () => rssMiB(child.pid),
        stderr: () => stderr,
        /** `{ code, signal }` once the process has exited, else undefined. */
        exitStatus: () => exitStatus,
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          const timeout = new Promise((done) => setTimeout(done, 5_000, 'timeout'));
          if ((await Promise.race([exited, timeout])) === 'timeout') {
            child.kill('SIGKILL');
            await exited;
          }
        },
      });
    };
    child.stdout.on('data', onData);
  });
}

/** Spawns `stream-posts serve` (the built CLI) with the given extra flags. */
export function startStreamPosts(flags, options = {}) {
  return startServerProcess(process.execPath, [CLI, 'serve', '--port', '0', '--quiet', ...flags], {
    name: 'stream-posts serve',
    ...options,
  });
}

/** Several server processes seen as one: the first exit, all stderr, summed CPU and RSS. */
export function asOne(servers) {
  const sum = (read) => servers.reduce((total, server) => total + (read(server) ?? NaN), 0);
  return {
    exitStatus: () => servers.map((server) => server.exitStatus()).find(Boolean),
    stderr: () => servers.map((server) => server.stderr()).join('\n'),
    cpuTimeMs: () => sum((server) => server.cpuTimeMs()),
    /** Each process's CPU time, in the order given. */
    cpuTimesMs: () => servers.map((server) => server.cpuTimeMs()),
    rssMiB: () => sum((server) => server.rssMiB()),
    stop: () => Promise.all(servers.map((server) => server.stop())),
  };
}
