import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import WebSocket from 'ws';
import { TestClient } from '../support/harness.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/stream-posts.js', import.meta.url));
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
  readonly #waiters = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    const wake = () => this.#waiters.forEach((waiter) => waiter());
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      wake();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      wake();
    });
    this.exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  }

  /** Complete stdout lines so far. */
  get lines(): string[] {
    const lines = this.stdout.split('\n');
    lines.pop();
    return lines;
  }

  /** Waits until `check` holds for the output (or the process ends, or time runs out). */
  async waitFor(check: (out: { stdout: string; stderr: string }) => boolean, what: string, timeoutMs = WAIT_MS): Promise<void> {
    let ended = false;
    void this.exited.then(() => {
      ended = true;
    });
    const deadline = Date.now() + timeoutMs;
    while (!check(this)) {
      if (ended || Date.now() > deadline) {
        throw new Error(`${ended ? 'process ended' : 'timed out'} waiting for ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#waiters.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, 50);
        this.#waiters.add(done);
      });
    }
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
        setTimeout(() => reject(new Error(`no exit within ${timeoutMs} ms\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`)), timeoutMs).unref(),
      ),
    ]);
  }
}

const running = new Set<CliProcess>();
const sockets = new Set<WebSocket>();

afterEach(async () => {
  for (const ws of sockets) ws.terminate();
  sockets.clear();
  const processes = [...running];
  running.clear();
  for (const cli of processes) cli.child.kill('SIGKILL');
  await Promise.all(processes.map((cli) => cli.exited));
});

/** Runs `node bin/stream-posts.js ...args` from the repository root; killed after the test. */
export function runCli(args: string[]): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  const cli = new CliProcess(child);
  running.add(cli);
  return cli;
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
