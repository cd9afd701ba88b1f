import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach } from 'vitest';
import WebSocket from 'ws';
import { Arrivals } from '../support/arrivals.js';
import { TestClient } from '../support/harness.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI under test; STREAM_POSTS_E2E_BIN points the e2e tests at another build (a packed or installed copy). */
export const BIN =
  process.env['STREAM_POSTS_E2E_BIN'] || fileURLToPath(new URL('../../bin/stream-posts.js', import.meta.url));
const WAIT_MS = 10_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running `stream-posts` process whose output is recorded as it arrives. */
export class CliProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  readonly #arrivals = new Arrivals();
  #ended = false;

  /** `processGroup`: the child leads its own process group, and the whole group is killed after the test. */
  constructor(
    readonly child: ChildProcess,
    readonly processGroup = false,
  ) {
    const wake = () => this.#arrivals.notify();
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      wake();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      wake();
    });
    this.exited = new Promise((resolve) =>
      child.on('close', (code, signal) => {
        this.#ended = true;
        resolve({ code, signal });
        wake();
      }),
    );
  }

  /** Complete stdout lines so far. */
  get lines(): string[] {
    const lines = this.stdout.split('\n');
    lines.pop();
    return lines;
  }

  /** Waits until `check` holds for the output (or the process ends, or time runs out). */
  async waitFor(
    check: (out: { stdout: string; stderr: string }) => boolean,
    what: string,
    timeoutMs = WAIT_MS,
  ): Promise<void> {
    const failure = (why: string) =>
      new Error(`${why} waiting for ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
    await this.#arrivals.until(
      () => {
        if (check(this)) return true;
        if (this.#ended) throw failure('process ended');
        return false;
      },
      timeoutMs,
      () => failure('timed out'),
    );
  }

  /** Waits for the `listening on …` line (stdout, or stderr with --exec) and returns the URL. */
  async url(stream: 'stdout' | 'stderr' = 'stdout'): Promise<string> {
    const pattern = /^listening on (wss?:\/\/127\.0\.0\.1:\d+)$/m;
    await this.waitFor((out) => pattern.test(out[stream]), 'the listening line');
    return pattern.exec(this[stream])![1]!;
  }

  /** Resolves with the exit, or rejects if it does not come in time. */
  exit(timeoutMs = WAIT_MS): Promise<Exit> {
    return Promise.race([
      this.exited,
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`no exit within ${timeoutMs} ms\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`)),
          timeoutMs,
        ).unref(),
      ),
    ]);
  }
}

const running = new Set<CliProcess>();
const runningForFile = new Set<CliProcess>();
const sockets = new Set<WebSocket>();

async function killAll(set: Set<CliProcess>): Promise<void> {
  const processes = [...set];
  set.clear();
  for (const cli of processes) {
    if (cli.processGroup && cli.child.pid !== undefined) {
      try {
        // A shell pipeline's other processes hold the output pipes open: end them with it.
        process.kill(-cli.child.pid, 'SIGKILL');
      } catch {
        // The group has already gone.
      }
    } else cli.child.kill('SIGKILL');
  }
  await Promise.all(processes.map((cli) => cli.exited));
}

afterEach(async () => {
  for (const ws of sockets) ws.terminate();
  sockets.clear();
  await killAll(running);
});

afterAll(() => killAll(runningForFile));

export interface RunOptions {
  /** `'pipe'` leaves `child.stdin` open for the test to write; a string is written and closed. Default: no stdin. */
  stdin?: 'ignore' | 'pipe' | string;
  /** Added to the environment; `undefined` removes a variable. `NO_COLOR=1` is set unless overridden here. */
  env?: Record<string, string | undefined>;
  /** Working directory, default the repository root. */
  cwd?: string;
  /** `'file'`: kept for every test of the file (a shared `serve`), killed after the last. Default `'test'`. */
  scope?: 'test' | 'file';
  /** Run in a new process group, killed as a whole (for shells and `script` that start processes of their own). */
  processGroup?: boolean;
}

/** Runs any program with recorded output; killed after the test like `runCli`. */
export function runProcess(file: string, args: string[], options: RunOptions = {}): CliProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const stdin = options.stdin ?? 'ignore';
  const child = spawn(file, args, {
    cwd: options.cwd ?? ROOT,
    stdio: [stdin === 'ignore' ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    env,
    detached: options.processGroup === true,
  });
  // A process that exits before reading everything must not fail the test with EPIPE.
  child.stdin?.on('error', () => {});
  if (stdin !== 'ignore' && stdin !== 'pipe') child.stdin!.end(stdin);
  const cli = new CliProcess(child, options.processGroup === true);
  (options.scope === 'file' ? runningForFile : running).add(cli);
  return cli;
}

/** Runs `node bin/stream-posts.js ...args` from the repository root; killed after the test. */
export function runCli(args: string[], options: RunOptions = {}): CliProcess {
  return runProcess(process.execPath, [BIN, ...args], options);
}

/** Opens a recording WebSocket client (terminated after the test). */
export async function openClient(url: string, options: WebSocket.ClientOptions = {}): Promise<TestClient> {
  const ws = new WebSocket(url, options);
  sockets.add(ws);
  const client = new TestClient(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return client;
}
