/**
 * Runs a short-lived command to its end and times it from spawn to exit:
 * what a user waits for, start-up included. Used by the benchmarks that
 * compare whole processes (bench/startup, bench/batch).
 */
import { spawn } from 'node:child_process';
import { REPO_ROOT } from './processes.mjs';

/**
 * Spawns `command args`, writes `input` (a string or Buffer, optional) to its
 * stdin and closes it, and resolves when the process has exited and its output
 * is read:
 *   { code, signal, wallMs, stdout, stderr, firstOutputMs, lastOutputMs }
 * `wallMs` runs from just before spawn to the exit event; `firstOutputMs` and
 * `lastOutputMs` are when the first and last stdout chunk arrived (ms after
 * spawn; null when there was none). Output is kept as Buffers and decoded
 * after exit, so the measuring process does little while the command runs.
 * A process still running after `timeoutMs` is killed and the promise rejects.
 */
export function runTimed(command, args, { input, env, cwd = REPO_ROOT, timeoutMs = 120_000, name = command } = {}) {
  return new Promise((resolve, reject) => {
    const stdout = [];
    const stderr = [];
    let firstOutputAt = null;
    let lastOutputAt = null;
    let exitedAt;
    let exit;
    const startedAt = performance.now();
    const child = spawn(command, args, { cwd, env: env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name}: still running after ${timeoutMs} ms; killed${tail(stderr)}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${name}: ${error.message}`));
    });
    child.stdout.on('data', (chunk) => {
      lastOutputAt = performance.now();
      firstOutputAt ??= lastOutputAt;
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk) => stderr.push(chunk));
    child.once('exit', (code, signal) => {
      exitedAt = performance.now();
      exit = { code, signal };
    });
    child.once('close', () => {
      clearTimeout(timer);
      resolve({
        ...exit,
        wallMs: exitedAt - startedAt,
        firstOutputMs: firstOutputAt === null ? null : firstOutputAt - startedAt,
        lastOutputMs: lastOutputAt === null ? null : lastOutputAt - startedAt,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
    // A command that exits without reading all its input must not fail the run with EPIPE.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

/** The last lines of a captured stderr, for an error message. */
function tail(chunks) {
  const text = Buffer.concat(chunks).toString('utf8').trim();
  return text ? `\n${text.slice(-2000)}` : '';
}

/** "exited 2: first line of stderr", for saying why a run did not count. */
export function describeFailure(result) {
  const status = result.signal ? `killed by ${result.signal}` : `exited ${result.code}`;
  const why = result.stderr.trim().split('\n').slice(0, 3).join(' / ');
  return why ? `${status}: ${why}` : status;
}
