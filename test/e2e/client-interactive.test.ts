import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminState,
  ensureBuilt,
  expectCleanError,
  inTerminal,
  KEYS,
  restPosts,
  runToEnd,
  SCRIPT,
  startServe,
  stripAnsi,
  waitForScreen,
  type Serve,
} from './client-support.js';
import type { CliProcess } from './spawn.js';

let serve: Serve;
let tmp: string;
beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-pty-'));
  serve = await startServe([], 0, 'file');
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const ENTER = '\r';
const DOWN = '\u001B[B';
const CTRL_C = '\u0003';
const ULID_LINE = /^([0-9A-HJKMNP-TV-Z]{26})\r?$/m;

/** The post command on a terminal with a stream's key (the key's owner owns every demo stream, so all are offered). */
function postInTerminal(args: string[] = [], redirect = '', key: string = KEYS.macroWire): CliProcess {
  return inTerminal(['post', '--url', serve.url, '--api-key', key, ...args], {}, redirect);
}

describe.skipIf(!existsSync(SCRIPT))('post prompts on a terminal', () => {
  it('asks for stream, content, type, release time and confirmation, then publishes and prints the id', async () => {
    const terminal = postInTerminal();
    let at = await waitForScreen(terminal, /Stream[\s\S]*whale-alerts[\s\S]*select/);
    // The streams are offered in some order: move down to macro-wire wherever it is.
    const offered = [...stripAnsi(terminal.stdout).matchAll(/\((crypto-legal|macro-wire|whale-alerts)\)/g)]
      .map((match) => match[1])
      .slice(0, 3);
    expect([...offered].sort()).toEqual(['crypto-legal', 'macro-wire', 'whale-alerts']);
    const moves = offered.indexOf('macro-wire');
    terminal.child.stdin!.write(DOWN.repeat(moves));
    // Enter picks what the list shows as chosen: wait for the redraw that points at macro-wire.
    if (moves > 0) at = await waitForScreen(terminal, /❯ Macro Wire \(macro-wire\)/, at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Content', at);
    terminal.child.stdin!.write(`typed on a terminal${ENTER}`);
    at = await waitForScreen(terminal, 'Content type', at);
    terminal.child.stdin!.write(`${DOWN}`);
    at = await waitForScreen(terminal, /❯ markdown/, at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Release at', at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, /Publish to Macro Wire\?/, at);
    terminal.child.stdin!.write(`y${ENTER}`);

    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    const id = ULID_LINE.exec(stripAnsi(terminal.stdout.slice(at)))?.[1];
    expect(id, terminal.stdout).toBeDefined();
    const [newest] = await restPosts(serve, 'macro-wire');
    expect(newest).toMatchObject({
      id,
      streamId: 'macro-wire',
      text: 'typed on a terminal',
      contentType: 'markdown',
      hidden: false,
      releaseAt: null,
    });
  });

  it('with --stream given, asks only for the rest; a typed release time hides the post', async () => {
    const terminal = postInTerminal(['--stream', 'crypto-legal'], '', KEYS.cryptoLegal);
    let at = await waitForScreen(terminal, 'Content');
    expect(stripAnsi(terminal.stdout)).not.toMatch(/\? Stream/);
    terminal.child.stdin!.write(`embargoed from a terminal${ENTER}`);
    at = await waitForScreen(terminal, 'Content type', at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Release at', at);
    terminal.child.stdin!.write(`+1h${ENTER}`);
    at = await waitForScreen(terminal, /Publish to .*hidden until/, at);
    terminal.child.stdin!.write(ENTER);

    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    const id = ULID_LINE.exec(stripAnsi(terminal.stdout.slice(at)))?.[1];
    expect(id, terminal.stdout).toBeDefined();
    const [newest] = await restPosts(serve, 'crypto-legal');
    expect(newest).toMatchObject({ id, text: null, contentType: 'rawtext', hidden: true });
    const hiddenFor = Date.parse(newest.releaseAt) - Date.parse(newest.createdAt);
    expect(hiddenFor).toBeGreaterThan(59 * 60_000);
    expect(hiddenFor).toBeLessThanOrEqual(60 * 60_000);
  });

  it('declining the confirmation publishes nothing and exits 2', async () => {
    const before = (await adminState(serve)).posts;
    const terminal = postInTerminal(['--stream', 'macro-wire']);
    let at = await waitForScreen(terminal, 'Content');
    terminal.child.stdin!.write(`a post I will not send${ENTER}`);
    at = await waitForScreen(terminal, 'Content type', at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Release at', at);
    terminal.child.stdin!.write(ENTER);
    await waitForScreen(terminal, 'Publish to', at);
    terminal.child.stdin!.write(`n${ENTER}`);
    expect((await terminal.exit()).code, terminal.stdout).toBe(2);
    expect(stripAnsi(terminal.stdout)).toMatch(/nothing was published/);
    expect((await adminState(serve)).posts).toBe(before);
  });

  it('Ctrl-C at a prompt publishes nothing and exits 2', async () => {
    const before = (await adminState(serve)).posts;
    const terminal = postInTerminal(['--stream', 'macro-wire']);
    await waitForScreen(terminal, 'Content');
    terminal.child.stdin!.write(`half typed${CTRL_C}`);
    expect((await terminal.exit()).code, terminal.stdout).toBe(2);
    const screen = stripAnsi(terminal.stdout);
    expect(screen).toMatch(/nothing was published/);
    expectCleanError(screen);
    expect((await adminState(serve)).posts).toBe(before);
  });

  it('no prompt unless both stdin and stderr are terminals: a missing value is exit 2 naming the flag', async () => {
    const before = (await adminState(serve)).posts;
    const stderrFile = join(tmp, 'stderr.txt');
    const stderrNotTty = postInTerminal(['hello'], ` 2>${stderrFile}`);
    const stdinNotTty = postInTerminal(['hello'], ' </dev/null');
    expect((await stderrNotTty.exit()).code, stderrNotTty.stdout).toBe(2);
    expect(await readFile(stderrFile, 'utf8')).toContain('missing --stream');
    expect((await stdinNotTty.exit()).code, stdinNotTty.stdout).toBe(2);
    expect(stdinNotTty.stdout).toContain('missing --stream');
    for (const terminal of [stderrNotTty, stdinNotTty]) expect(stripAnsi(terminal.stdout)).not.toMatch(/\? Stream/);
    expect((await adminState(serve)).posts).toBe(before);
  });
});

describe('post without a terminal', () => {
  it('missing --stream is exit 2 naming --stream; missing content is exit 2 about the content; nothing published', async () => {
    const before = (await adminState(serve)).posts;
    const [noStream, noContent] = await Promise.all([
      runToEnd(['post', '--url', serve.url, '--api-key', KEYS.macroWire, 'hello']),
      runToEnd(['post', '--url', serve.url, '--api-key', KEYS.macroWire, '--stream', 'macro-wire']),
    ]);
    expect(noStream.code).toBe(2);
    expect(noStream.stderr).toContain('--stream');
    expect(noContent.code).toBe(2);
    expect(noContent.stderr).toMatch(/content/);
    for (const result of [noStream, noContent]) {
      expect(result.stdout).toBe('');
      expectCleanError(result.stderr);
    }
    expect((await adminState(serve)).posts).toBe(before);
  });
});
