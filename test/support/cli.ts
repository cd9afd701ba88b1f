import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Arrivals } from './arrivals.js';
import { forEachFile } from './file-hooks.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI under test; STREAM_POSTS_E2E_BIN points the e2e tests at another build (a packed or installed copy). */
export const BIN =
  process.env['STREAM_POSTS_E2E_BIN'] || fileURLToPath(new URL('../../bin/stream-posts.js', import.meta.url));
const WAIT_MS = 10_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A command line running, in its own process (CliProcess) or in this one (in-process.ts). */
export interface RunningCli {
  readonly stdout: string;
  readonly stderr: string;
  readonly lines: string[];
  waitFor(check: (out: { stdout: string; stderr: string }) => boolean, what: string, timeoutMs?: number): Promise<void>;
  exit(timeoutMs?: number): Promise<Exit>;
}

/** A running `stream-posts` process whose output is recorded as it arrives. */
export class CliProcess implements RunningCli {
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
    await this.#arrivals.untilOutput(this, check, what, { is: () => this.#ended, what: 'process ended' }, timeoutMs);
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

forEachFile({ afterEach: () => killAll(running), afterAll: () => killAll(runningForFile) });

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

/** Builds once per worker if a test file runs before `npm run build` did. */
export function ensureBuilt(): void {
  buildUnless('dist/cli.js');
}

/** The dashboard `serve` ships, from dist/dashboard/, built as `ensureBuilt` builds the CLI. */
export function ensureDashboardBuilt(): void {
  buildUnless('dist/dashboard/index.html');
}

function buildUnless(built: string): void {
  if (!existsSync(join(ROOT, built))) execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT });
}

// No config file, no inherited settings: a developer's own profile or key must not leak into a test.
export const ISOLATED_ENV: Record<string, string | undefined> = {
  XDG_CONFIG_HOME: join(tmpdir(), `stream-posts-e2e-no-config-${process.pid}`),
  STREAM_POSTS_URL: undefined,
  STREAM_POSTS_API_KEY: undefined,
  STREAM_POSTS_PROFILE: undefined,
  STREAM_POSTS_ADMIN_TOKEN: undefined,
  STREAM_POSTS_ALLOWED_HOSTS: undefined,
  STREAM_POSTS_ALLOW_ORIGIN: undefined,
  FORCE_COLOR: undefined,
};

/** `runCli` with a clean environment (no config file, no STREAM_POSTS_* variables). */
export function client(args: string[], options: RunOptions = {}): CliProcess {
  return runCli(args, { ...options, env: { ...ISOLATED_ENV, ...options.env } });
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A bash command line with the same clean environment (for pipes into other programs). */
export function shell(command: string, options: RunOptions = {}): CliProcess {
  return runProcess('bash', ['-c', command], {
    ...options,
    processGroup: true,
    env: { ...ISOLATED_ENV, ...options.env },
  });
}

/** The shell words that run the CLI under test. */
export function cliCommandLine(args: string[]): string {
  return [process.execPath, BIN, ...args].map(shellQuote).join(' ');
}

/** Runs a client command to its end. */
export async function finish(cli: RunningCli, timeoutMs?: number): Promise<Finished> {
  const { code } = await cli.exit(timeoutMs);
  return { code, stdout: cli.stdout, stderr: cli.stderr };
}

export function runToEnd(args: string[], options: RunOptions = {}, timeoutMs?: number): Promise<Finished> {
  return finish(client(args, options), timeoutMs);
}

export const SCRIPT = '/usr/bin/script';

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs `stream-posts ...args` on a pseudo-terminal (util-linux `script`), so
 * stdin, stdout and stderr are all TTYs. Everything the command writes comes
 * back, merged, on the returned process's stdout; keystrokes go to its stdin.
 * `redirect` is appended to the shell command line (e.g. ` 2>/dev/null`).
 */
export function inTerminal(
  args: string[],
  env: Record<string, string | undefined> = {},
  redirect = '',
  sized: boolean | number = false,
): CliProcess {
  // `sized`: the terminal reports 100x40 as a real one does (`script` under a test gets 0x0, and ora needs a width);
  // a number is the columns it reports instead of 100.
  // `exec`: the command replaces the shell, so a Ctrl-C reaches it alone and its exit code is the terminal's (a
  // shell left waiting, as dash is, would die of the SIGINT itself and report 130 whatever the command did).
  const columns = typeof sized === 'number' ? sized : 100;
  const command = `${sized === false ? '' : `stty cols ${columns} rows 40; `}exec ${cliCommandLine(args)}${redirect}`;
  return runProcess(SCRIPT, ['-qfec', command, '/dev/null'], {
    stdin: 'pipe',
    processGroup: true,
    // `script` runs the line with $SHELL: the same shell everywhere, whatever the machine's user has.
    env: { ...ISOLATED_ENV, SHELL: '/bin/sh', TERM: 'xterm-256color', COLUMNS: '100', LINES: '40', ...env },
  });
}
