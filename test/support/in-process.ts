// Runs a command line in this process, as the entry would, with a context of its own: what
// the command writes lands in memory, its exit code is recorded, and aborting the context's
// signal stands in for Ctrl-C. For everything that needs no real process (exit statuses by
// signal, TTYs, pipes and the built bin stay with cli.ts).
import { Readable, Writable } from 'node:stream';
import type { ProgramContext } from '../../src/cli/command-context.js';
import type { CommandIo, CommandOutput } from '../../src/cli/command-io.js';
import { runProgram } from '../../src/cli/run.js';
import { Arrivals } from './arrivals.js';
import { ISOLATED_ENV, type Exit, type Finished, type RunningCli } from './cli.js';
import { forEachFile } from './file-hooks.js';

const WAIT_MS = 10_000;

/** An output stream that keeps what was written, as text. */
export class MemoryOutput extends Writable implements CommandOutput {
  text = '';
  isTTY?: boolean;
  columns?: number;

  constructor(readonly onWrite: () => void = () => {}) {
    super({ decodeStrings: false });
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    this.onWrite();
    done();
  }
}

export interface InProcessOptions {
  /** What standard input holds (default: nothing, as /dev/null). */
  stdin?: string;
  /** Added to a clean environment (no config file, no STREAM_POSTS_*); `undefined` removes one. `NO_COLOR=1` unless overridden. */
  env?: Record<string, string | undefined>;
}

/** A clean environment, as `client()` gives a spawned CLI. */
export function testEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const [name, value] of Object.entries({ ...ISOLATED_ENV, ...extra })) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** A context over memory streams, for a command called directly. */
export function testIo(
  options: InProcessOptions & { signal?: AbortSignal; onWrite?: () => void } = {},
): CommandIo & { streams: { stdout: MemoryOutput; stderr: MemoryOutput } } {
  return {
    streams: {
      stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
      stdout: new MemoryOutput(options.onWrite),
      stderr: new MemoryOutput(options.onWrite),
    },
    env: testEnv(options.env),
    signal: options.signal ?? new AbortController().signal,
    clock: { now: () => Date.now() },
    invokedAs: 'stream-posts',
  };
}

/** A command line running in this process; the same reading surface as a spawned CliProcess. */
export class InProcessRun implements RunningCli {
  readonly exited: Promise<Exit>;
  readonly #arrivals = new Arrivals();
  readonly #stopping = new AbortController();
  readonly #io: ReturnType<typeof testIo>;
  #ended = false;

  constructor(args: string[], options: InProcessOptions = {}) {
    this.#io = testIo({ ...options, signal: this.#stopping.signal, onWrite: () => this.#arrivals.notify() });
    let code = 0;
    const context: ProgramContext = {
      ...this.#io,
      setExitCode: (value) => {
        code = value;
      },
    };
    this.exited = runProgram(['node', 'stream-posts', ...args], context).then(() => {
      this.#ended = true;
      this.#arrivals.notify();
      return { code, signal: null };
    });
  }

  get stdout(): string {
    return this.#io.streams.stdout.text;
  }

  get stderr(): string {
    return this.#io.streams.stderr.text;
  }

  /** Whether the command has returned. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Complete stdout lines so far. */
  get lines(): string[] {
    const lines = this.stdout.split('\n');
    lines.pop();
    return lines;
  }

  /** Ctrl-C or SIGTERM, as the entry hands them to a command that listens. */
  interrupt(signal: 'SIGINT' | 'SIGTERM' = 'SIGINT'): void {
    this.#stopping.abort(signal);
  }

  /** Waits until `check` holds for the output (or the command ends, or time runs out). */
  async waitFor(
    check: (out: { stdout: string; stderr: string }) => boolean,
    what: string,
    timeoutMs = WAIT_MS,
  ): Promise<void> {
    await this.#arrivals.untilOutput(this, check, what, { is: () => this.#ended, what: 'command ended' }, timeoutMs);
  }

  /** Resolves with the exit, or rejects if it does not come in time. */
  exit(timeoutMs = WAIT_MS): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      this.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no exit within ${timeoutMs} ms\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`)),
          timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  }
}

const running = new Set<InProcessRun>();

// A command a test left running is stopped as Ctrl-C stops it, and awaited.
forEachFile({
  async afterEach() {
    const runs = [...running];
    running.clear();
    for (const run of runs) run.interrupt();
    await Promise.all(runs.map((run) => run.exited));
  },
});

/** Starts a command line in this process (a clean environment); stopped after the test if still running. */
export function inProcess(args: string[], options: InProcessOptions = {}): InProcessRun {
  const run = new InProcessRun(args, options);
  running.add(run);
  void run.exited.then(() => running.delete(run));
  return run;
}

/** Runs a command line in this process to its end. */
export async function runInProcess(
  args: string[],
  options: InProcessOptions = {},
  timeoutMs?: number,
): Promise<Finished> {
  const run = inProcess(args, options);
  const { code } = await run.exit(timeoutMs);
  return { code, stdout: run.stdout, stderr: run.stderr };
}
