import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { KEYS } from '../support/harness.js';
import { BIN, openClient, ROOT, runCli, runProcess, type CliProcess, type RunOptions } from './spawn.js';

export { KEYS };

/** Builds once per worker if a test file runs before `npm run build` did. */
export function ensureBuilt(): void {
  if (!existsSync(join(ROOT, 'dist/cli.js'))) execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT });
}

// No config file, no inherited settings: a developer's own profile or key must not leak into a test.
const ISOLATED_ENV: Record<string, string | undefined> = {
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
export async function finish(cli: CliProcess, timeoutMs?: number): Promise<Finished> {
  const { code } = await cli.exit(timeoutMs);
  return { code, stdout: cli.stdout, stderr: cli.stderr };
}

export function runToEnd(args: string[], options: RunOptions = {}, timeoutMs?: number): Promise<Finished> {
  return finish(client(args, options), timeoutMs);
}

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

export interface Serve {
  cli: CliProcess;
  url: string;
  httpUrl: string;
  port: number;
}

/** `serve --port 0 --quiet` (or the given port); resolves with its URLs. `scope: 'file'` shares it between a file's tests. */
export async function startServe(args: string[] = [], port = 0, scope: 'test' | 'file' = 'test'): Promise<Serve> {
  const cli = client(['serve', '--port', String(port), '--quiet', ...args], { scope });
  const url = await cli.url();
  return { cli, url, httpUrl: url.replace(/^ws/, 'http'), port: Number(new URL(url).port) };
}

/** What most e2e files share: the CLI built, a temporary folder, one `serve` for all the file's tests. */
export interface CliFixture {
  readonly serve: Serve;
  readonly tmp: string;
}

/** Sets up a CliFixture before the file's tests (`name` labels the folder) and removes the folder after them. */
export function cliFixture(name: string, serveArgs: string[] = []): CliFixture {
  const fixture = {} as { serve: Serve; tmp: string };
  beforeAll(async () => {
    ensureBuilt();
    fixture.tmp = await mkdtemp(join(tmpdir(), `stream-posts-${name}-`));
    fixture.serve = await startServe(serveArgs, 0, 'file');
  });
  afterAll(() => rm(fixture.tmp, { recursive: true, force: true }));
  return fixture;
}

/** Posts of a stream through REST, newest first, as the newsdesk (owner of every demo stream). */
export async function restPosts(
  serve: Pick<Serve, 'httpUrl'>,
  streamId: string,
  key: string = KEYS.newsdesk,
): Promise<any[]> {
  const response = await fetch(`${serve.httpUrl}/v1/streams/${streamId}/posts?limit=100`, {
    headers: { 'x-api-key': key },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { posts: any[] }).posts;
}

/** Stream keys of the demo seed by stream id. */
export const STREAM_KEYS: Record<string, string> = {
  'crypto-legal': KEYS.cryptoLegal,
  'macro-wire': KEYS.macroWire,
  'whale-alerts': KEYS.whaleAlerts,
};

/** `post --json` with the stream's key; asserts exit 0 and returns the `{post, duplicate}` line. */
export async function postWithCli(
  url: string,
  streamId: string,
  content: string,
  flags: string[] = [],
): Promise<{ post: any; duplicate: boolean }> {
  const result = await runToEnd([
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

/**
 * Publishes straight over a WebSocket with the stream's key, no process: for
 * tests where `post` is not what is being tested. Returns the ack's data.
 */
export async function publishWs(
  url: string,
  streamId: string,
  content: string,
  extra: Record<string, unknown> = {},
): Promise<{ post: any; duplicate: boolean }> {
  const ws = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': STREAM_KEYS[streamId]! } });
  await ws.nextEvent('connected');
  const reply = await ws.request('add-stream-post', { streamId, content, contentType: 'rawtext', ...extra });
  ws.close();
  expect(reply.event, JSON.stringify(reply)).toBe('ack');
  return reply.data;
}

/** `releaseAt` this far ahead, as ISO 8601. */
export function inMs(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/** Starts `listen`/`tree` and resolves once it said it is subscribed (needs stderr status: no -q). */
export async function subscribed(args: string[], options: RunOptions = {}): Promise<CliProcess> {
  const cli = client(args, options);
  await cli.waitFor((out) => /^stream-posts: subscribed: /m.test(out.stderr), 'the subscription');
  return cli;
}

/** Waits until stdout has at least `count` complete JSON lines; returns them. */
export async function waitForLines(cli: CliProcess, count: number, what = `${count} JSON lines`): Promise<any[]> {
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

/** The post as a follower receives it while hidden. */
export function hiddenView(post: any): any {
  return { ...post, text: null, hidden: true };
}

/**
 * The tree item PROTOCOL.md B3 maps a post to. `derived` is what the text
 * yields (`link`, `coin`, `suggestions`): the test states it for the content it chose.
 */
export function expectedTreeItem(
  post: any,
  hidden: boolean,
  derived: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    _id: post.id,
    title: post.streamName,
    body: hidden ? '' : post.text,
    en: hidden ? '' : post.text,
    source: post.streamName,
    time: Date.parse(post.createdAt),
    type: 'stream-post',
    contentType: post.contentType,
    streamId: post.streamId,
    hidden,
    ...(post.releaseAt === null ? {} : { releaseAt: Date.parse(post.releaseAt) }),
    ...(hidden ? {} : derived),
  };
}

export { TcpProxy } from '../support/proxy.js';

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

/** Waits for `text` on the terminal (escape codes stripped) after the given offset; returns the new offset. */
export async function waitForScreen(terminal: CliProcess, text: string | RegExp, from = 0): Promise<number> {
  const found = () => {
    const screen = stripAnsi(terminal.stdout.slice(from));
    return typeof text === 'string' ? screen.indexOf(text) : screen.search(text);
  };
  await terminal.waitFor(() => found() >= 0, `${String(text)} on the terminal`);
  return terminal.stdout.length;
}
