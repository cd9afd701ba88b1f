import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminState, KEYS, restPosts } from '../support/harness.js';
import { deadUrl } from '../support/ports.js';
import { expectCleanError, stripAnsi, waitForScreen } from '../support/cli-output.js';
import { inTerminal, runToEnd, SCRIPT, type CliProcess } from '../support/cli.js';
import { cliFixture } from '../support/serve.js';

const fixture = cliFixture('pty');

const ENTER = '\r';
const DOWN = '\u001B[B';
const CTRL_C = '\u0003';
const PUBLISHED = /published ([0-9A-HJKMNP-TV-Z]{26}) to ([^\r\n]*)/;
/** No prompt of inquirer's was drawn. */
const NO_QUESTION = /^\? /m;

/** The post command on a terminal (in UTC unless `env` says otherwise, with no editor unless given). */
function postInTerminal(
  args: string[] = [],
  redirect = '',
  key: string = KEYS.macroWire,
  env: Record<string, string | undefined> = {},
): CliProcess {
  return inTerminal(
    ['post', '--url', fixture.serve.url, '--api-key', key, ...args],
    {
      TZ: 'UTC',
      VISUAL: undefined,
      EDITOR: undefined,
      ...env,
    },
    redirect,
    true,
  );
}

describe.skipIf(!existsSync(SCRIPT))('post prompts on a terminal', () => {
  it('a stream key is not asked for its stream: content, type, release time, confirmation, then says what it published', async () => {
    const terminal = postInTerminal();
    let at = await waitForScreen(terminal, 'Content');
    expect(stripAnsi(terminal.stdout)).not.toMatch(/Stream/);
    terminal.child.stdin!.write(`typed on a terminal${ENTER}`);
    at = await waitForScreen(terminal, 'Content type', at);
    terminal.child.stdin!.write(`${DOWN}`);
    at = await waitForScreen(terminal, /❯ markdown/, at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Release at', at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, /Publish to Macro Wire \(macro-wire\)\?/, at);
    terminal.child.stdin!.write(`y${ENTER}`);

    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    const said = PUBLISHED.exec(stripAnsi(terminal.stdout.slice(at)));
    expect(said?.[2], terminal.stdout).toBe('Macro Wire');
    const [newest] = await restPosts(fixture.serve, 'macro-wire');
    expect(newest).toMatchObject({
      id: said![1],
      streamId: 'macro-wire',
      text: 'typed on a terminal',
      contentType: 'markdown',
      hidden: false,
      releaseAt: null,
    });
  });

  it.each([
    ['UTC', 'UTC', 0],
    ['Asia/Kolkata', '+05:30', 330],
  ])(
    'in %s, the confirmation shows the release time with its zone, exactly the time sent; --markdown skips the type',
    async (zone, suffix, offsetMinutes) => {
      const terminal = postInTerminal(['--stream', 'crypto-legal', '--markdown'], '', KEYS.cryptoLegal, { TZ: zone });
      let at = await waitForScreen(terminal, 'Content');
      terminal.child.stdin!.write(`embargoed from a terminal${ENTER}`);
      at = await waitForScreen(terminal, 'Release at', at);
      terminal.child.stdin!.write(`+1h${ENTER}`);
      at = await waitForScreen(terminal, /Publish to .*hidden until .*\?/, at);
      const shown = /hidden until (\d{4}-\d\d-\d\d) (\d\d:\d\d(?::\d\d)?) (\S+)\?/.exec(stripAnsi(terminal.stdout))!;
      expect(shown[3]).toBe(suffix);
      terminal.child.stdin!.write(ENTER);

      expect((await terminal.exit()).code, terminal.stdout).toBe(0);
      const screen = stripAnsi(terminal.stdout);
      expect(screen).not.toContain('Content type');
      const id = PUBLISHED.exec(screen.slice(stripAnsi(terminal.stdout.slice(0, at)).length))?.[1];
      expect(id, terminal.stdout).toBeDefined();
      // Held back from a reader until its release; whole for its owner.
      const [newest] = await restPosts(fixture.serve, 'crypto-legal', KEYS.alice);
      expect(newest).toMatchObject({ id, text: null, contentType: 'markdown', hidden: true });
      const [owned] = await restPosts(fixture.serve, 'crypto-legal');
      expect(owned).toMatchObject({ id, text: 'embargoed from a terminal', hidden: true });
      // The time shown, read in its zone, is the time the service holds.
      const [, day, time = ''] = shown;
      const local = Date.parse(`${day}T${time.length === 5 ? `${time}:00` : time}Z`);
      expect(new Date(local - offsetMinutes * 60_000).toISOString()).toBe(newest.releaseAt);
      const hiddenFor = Date.parse(newest.releaseAt) - Date.parse(newest.createdAt);
      expect(hiddenFor).toBeGreaterThan(59 * 60_000);
      // Rounded up to the second: at most a second over the hour.
      expect(hiddenFor).toBeLessThanOrEqual(60 * 60_000 + 1_000);
    },
  );

  it('content of several lines is written in $VISUAL when the first line is left empty', async () => {
    const editor = join(fixture.tmp, 'editor.sh');
    await writeFile(editor, `#!/bin/sh\nprintf 'first line\\n\\nthird line\\n' > "$1"\n`, { mode: 0o755 });
    const terminal = postInTerminal(['--markdown'], '', KEYS.macroWire, { VISUAL: editor });
    let at = await waitForScreen(terminal, 'Enter to write it in editor.sh');
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Release at', at);
    terminal.child.stdin!.write(ENTER);
    at = await waitForScreen(terminal, 'Publish to Macro Wire (macro-wire)?', at);
    terminal.child.stdin!.write(ENTER);
    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    const id = PUBLISHED.exec(stripAnsi(terminal.stdout.slice(at)))?.[1];
    const [newest] = await restPosts(fixture.serve, 'macro-wire');
    expect(newest).toMatchObject({ id, text: 'first line\n\nthird line\n', contentType: 'markdown' });
  });

  it('a reader key, a refused key or a stopped service ends the command before the first question', async () => {
    const dead = await deadUrl();
    const reader = postInTerminal([], '', KEYS.alice);
    const readerWithStream = postInTerminal(['--stream', 'macro-wire'], '', KEYS.alice);
    const otherStream = postInTerminal(['--stream', 'crypto-legal'], '', KEYS.macroWire);
    const refused = postInTerminal([], '', 'sp_not_a_key');
    const refusedRest = postInTerminal(['--via', 'rest'], '', 'sp_not_a_key');
    const stopped = inTerminal(['post', '--url', dead, '--api-key', KEYS.macroWire], { TZ: 'UTC' });
    expect((await reader.exit()).code, reader.stdout).toBe(2);
    expect(stripAnsi(reader.stdout)).toMatch(/this key publishes to no stream \(a reader key\)/);
    expect((await readerWithStream.exit()).code, readerWithStream.stdout).toBe(2);
    expect(stripAnsi(readerWithStream.stdout)).toContain(
      'this key publishes to no stream (a reader key), not to macro-wire',
    );
    expect((await otherStream.exit()).code, otherStream.stdout).toBe(2);
    expect(stripAnsi(otherStream.stdout)).toContain('this key publishes to macro-wire only, not to crypto-legal');
    for (const terminal of [refused, refusedRest]) {
      expect((await terminal.exit()).code, terminal.stdout).toBe(3);
      expect(stripAnsi(terminal.stdout)).toContain('the service refused the key from --api-key');
    }
    expect((await stopped.exit()).code, stopped.stdout).toBe(3);
    for (const terminal of [reader, readerWithStream, otherStream, refused, refusedRest, stopped]) {
      expect(stripAnsi(terminal.stdout)).not.toMatch(NO_QUESTION);
      expectCleanError(stripAnsi(terminal.stdout));
    }
  });

  it('--api-key-stdin on a terminal asks for the key without echoing it', async () => {
    const terminal = inTerminal(['post', '--url', fixture.serve.url, '--api-key-stdin', 'from a hidden key'], {
      TZ: 'UTC',
    });
    await waitForScreen(terminal, 'API key');
    terminal.child.stdin!.write(`${KEYS.macroWire}${ENTER}`);
    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    expect(terminal.stdout).not.toContain(KEYS.macroWire);
    const id = PUBLISHED.exec(stripAnsi(terminal.stdout))?.[1];
    const [newest] = await restPosts(fixture.serve, 'macro-wire');
    expect(newest).toMatchObject({ id, text: 'from a hidden key' });
  });

  it('without prompts, a terminal still gets a sentence: what was published where, hidden until when', async () => {
    const terminal = postInTerminal(['--release-at', '+2h', 'a sentence for people'], '', KEYS.macroWire);
    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    const [newest] = await restPosts(fixture.serve, 'macro-wire');
    const until = new Date(newest.releaseAt);
    const hhmm = `${String(until.getUTCHours()).padStart(2, '0')}:${String(until.getUTCMinutes()).padStart(2, '0')}`;
    expect(stripAnsi(terminal.stdout)).toMatch(
      new RegExp(
        `published ${newest.id} to Macro Wire \\(hidden until (\\d{4}-\\d\\d-\\d\\d )?${hhmm}(:\\d\\d)? UTC\\)`,
      ),
    );
  });

  it('declining the confirmation publishes nothing and exits 2', async () => {
    const before = (await adminState(fixture.serve)).posts;
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
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });

  it('Ctrl-C at a prompt publishes nothing and exits 2', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const terminal = postInTerminal(['--stream', 'macro-wire']);
    await waitForScreen(terminal, 'Content');
    terminal.child.stdin!.write(`half typed${CTRL_C}`);
    expect((await terminal.exit()).code, terminal.stdout).toBe(2);
    const screen = stripAnsi(terminal.stdout);
    expect(screen).toMatch(/nothing was published/);
    expectCleanError(screen);
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });

  it('no prompt unless both stdin and stderr are terminals: a missing value is exit 2 naming the flag', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const stderrFile = join(fixture.tmp, 'stderr.txt');
    const stderrNotTty = postInTerminal([], ` 2>${stderrFile}`);
    const stdinNotTty = postInTerminal([], ' </dev/null');
    expect((await stderrNotTty.exit()).code, stderrNotTty.stdout).toBe(2);
    expect(await readFile(stderrFile, 'utf8')).toContain('no content');
    expect((await stdinNotTty.exit()).code, stdinNotTty.stdout).toBe(2);
    expect(stdinNotTty.stdout).toContain('no content');
    for (const terminal of [stderrNotTty, stdinNotTty]) expect(stripAnsi(terminal.stdout)).not.toMatch(NO_QUESTION);
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });
});

describe('post without a terminal', () => {
  it('missing --stream is exit 2 naming --stream; missing content is exit 2 about the content; nothing published', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const [noStream, noContent] = await Promise.all([
      runToEnd(['post', '--url', fixture.serve.url, '--api-key', KEYS.alice, 'hello']),
      runToEnd(['post', '--url', fixture.serve.url, '--api-key', KEYS.macroWire, '--stream', 'macro-wire']),
    ]);
    expect(noStream.code).toBe(2);
    expect(noStream.stderr).toContain('--stream');
    expect(noContent.code).toBe(2);
    expect(noContent.stderr).toMatch(/content/);
    for (const result of [noStream, noContent]) {
      expect(result.stdout).toBe('');
      expectCleanError(result.stderr);
    }
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });
});
