import { expect } from 'vitest';
import { client, type CliProcess, type RunningCli, type RunOptions } from './cli.js';
import { inProcess, runInProcess, type InProcessOptions, type InProcessRun } from './in-process.js';
import { KEYS, STREAM_KEYS } from './harness.js';

/** Every stdout line parsed as JSON (fails on a line that is not). */
export function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`stdout line is not JSON: ${JSON.stringify(line)}`);
      }
    });
}

/** `post --json` with the stream's key, run in-process; asserts exit 0 and returns the `{post, duplicate}` line. */
export async function postWithCli(
  url: string,
  streamId: string,
  content: string,
  flags: string[] = [],
): Promise<{ post: any; duplicate: boolean }> {
  const result = await runInProcess([
    'post',
    '--url',
    url,
    '--api-key',
    STREAM_KEYS[streamId]!,
    '--stream',
    streamId,
    '--json',
    ...flags,
    content,
  ]);
  expect(result.code, result.stderr).toBe(0);
  const lines = jsonLines(result.stdout);
  expect(lines).toHaveLength(1);
  return lines[0];
}

/** Starts `listen`/`tree` and resolves once it said it is subscribed (needs stderr status: no -q). */
export async function subscribed(args: string[], options: RunOptions = {}): Promise<CliProcess> {
  const cli = client(args, options);
  await cli.waitFor((out) => /^stream-posts: subscribed: /m.test(out.stderr), 'the subscription');
  return cli;
}

/** `subscribed`, the command run in this process (stop it with `interrupt`). */
export async function subscribedInProcess(args: string[], options: InProcessOptions = {}): Promise<InProcessRun> {
  const run = inProcess(args, options);
  await run.waitFor((out) => /^stream-posts: subscribed: /m.test(out.stderr), 'the subscription');
  return run;
}

/** Waits until stdout has at least `count` complete JSON lines; returns them. */
export async function waitForLines(cli: RunningCli, count: number, what = `${count} JSON lines`): Promise<any[]> {
  await cli.waitFor((out) => out.stdout.split('\n').length - 1 >= count, what);
  return jsonLines(cli.stdout);
}

/** stderr of a failed command: says why, with no stack trace and none of these keys. */
export function expectCleanError(stderr: string, keys: string[] = Object.values(KEYS)): void {
  expect(stderr).not.toMatch(/at .*\(/);
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toMatch(/internal error/i);
  for (const key of keys) expect(stderr).not.toContain(key);
}

export const ANSI = /\u001B\[/;

const ANSI_SEQUENCE = /\u001B\[[0-9;?]*[A-Za-z]|\u001B\][^\u0007]*\u0007/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, '');
}

/** Waits for `text` on the terminal (escape codes stripped) after the given offset; returns the new offset. */
export async function waitForScreen(terminal: RunningCli, text: string | RegExp, from = 0): Promise<number> {
  const found = () => {
    const screen = stripAnsi(terminal.stdout.slice(from));
    return typeof text === 'string' ? screen.indexOf(text) : screen.search(text);
  };
  await terminal.waitFor(() => found() >= 0, `${String(text)} on the terminal`);
  return terminal.stdout.length;
}
