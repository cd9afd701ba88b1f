import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_POSTS } from '../../src/demo/publisher.js';
import { ANSI, expectCleanError, jsonLines, stripAnsi, waitForLines } from '../support/cli-output.js';
import { client, ensureBuilt, finish, inTerminal, runToEnd, shell, BIN, ROOT } from '../support/cli.js';
import { startServe } from '../support/serve.js';

beforeAll(ensureBuilt);

// The first four samples: all for alice (the demo's viewer); the fourth is hidden for a few seconds.
const samples = SAMPLE_POSTS.slice(0, 4);
const hiddenSample = samples[3]!;

describe('demo', () => {
  it('--count 4 shows the four posts and the hidden one’s release, then exits 0 (tree and listen views, text and JSON)', async () => {
    expect(samples.map((sample) => sample.releaseInMs !== undefined)).toEqual([false, false, false, true]);
    const taken = await startServe();
    const demo = (flags: string[]) =>
      runToEnd(['demo', '--count', '4', '--interval', '200ms', '--port', '0', ...flags], {}, 15_000);
    const interrupted = (async () => {
      const cli = client(['demo', '--interval', '200ms', '--port', '0', '--json']);
      await waitForLines(cli, 1);
      cli.child.kill('SIGINT');
      return finish(cli);
    })();
    const [text, treeJson, listenJson, timed, portTaken, stopped] = await Promise.all([
      demo(['--no-color']),
      demo(['--json']),
      demo(['--json', '--view', 'listen']),
      runToEnd(['demo', '--duration', '1s', '--interval', '200ms', '--port', '0', '--json', '-q']),
      runToEnd(['demo', '--duration', '1s', '--interval', '200ms', '--port', String(taken.port), '--json']),
      interrupted,
    ]);
    for (const result of [text, treeJson, listenJson, timed, portTaken, stopped]) {
      expect(result.code, result.stderr).toBe(0);
      // The demo's banner names a demo key on purpose (like serve's), so only stack traces are checked.
      expectCleanError(result.stderr, []);
    }

    const items = jsonLines(treeJson.stdout);
    expect(items).toHaveLength(5);
    expect(items.slice(0, 3).map((item) => [item.streamId, item.body, item.hidden])).toEqual(
      samples.slice(0, 3).map((sample) => [sample.streamId, sample.content, false]),
    );
    expect(items[3]).toMatchObject({ streamId: hiddenSample.streamId, body: '', hidden: true, type: 'stream-post' });
    expect(items[4]).toMatchObject({
      _id: items[3]._id,
      streamId: hiddenSample.streamId,
      body: hiddenSample.content,
      hidden: false,
    });

    const events = jsonLines(listenJson.stdout);
    expect(events.map((event) => event.event)).toEqual([
      ...Array(4).fill('stream.post.created'),
      'stream.post.released',
    ]);
    expect(events.slice(0, 3).map((event) => event.data.text)).toEqual(
      samples.slice(0, 3).map((sample) => sample.content),
    );
    expect(events[3].data).toMatchObject({ text: null, hidden: true, streamId: hiddenSample.streamId });
    expect(events[4].data).toMatchObject({ id: events[3].data.id, text: hiddenSample.content, hidden: false });

    // Text view: no colour, every post and the release, the embargoed text only once (after its release).
    expect(text.stdout).not.toMatch(ANSI);
    const embargoed = hiddenSample.content.slice(0, 30);
    expect(text.stdout.split(embargoed)).toHaveLength(2);
    let from = 0;
    for (const name of ['Crypto Legal Updates', 'Macro Wire', 'Whale Alerts', 'Crypto Legal Updates']) {
      const at = text.stdout.indexOf(name, from);
      expect(at, `${name} after offset ${from}`).toBeGreaterThanOrEqual(0);
      from = at + name.length;
    }
    expect(text.stdout.indexOf(embargoed)).toBeGreaterThan(from);
    expect(text.stderr).toMatch(/serve on ws:\/\/127\.0\.0\.1:\d+/);

    // --duration ends the demo on time with whatever was shown; -q keeps stderr empty.
    expect(jsonLines(timed.stdout).length).toBeGreaterThanOrEqual(1);
    expect(timed.stderr).toBe('');
    // The port in use by a serve: the demo takes another one.
    const port = Number(/serve on ws:\/\/127\.0\.0\.1:(\d+)/.exec(portTaken.stderr)?.[1]);
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(taken.port);
    expect(jsonLines(portTaken.stdout).length).toBeGreaterThanOrEqual(1);
    // Ctrl-C is a normal end.
    expect(jsonLines(stopped.stdout).length).toBeGreaterThanOrEqual(1);
  });
});

describe('the demo banner', () => {
  it('suggests the command as it was run: npx only under npx, the name on PATH, node and the script otherwise', async () => {
    const bin = await mkdtemp(join(tmpdir(), 'stream-posts-demo-bin-'));
    try {
      await symlink(BIN, join(bin, 'stream-posts'));
      // Where npx installs a package it fetched: a cache directory named _npx.
      const cached = join(bin, '_npx', 'a1b2c3', 'node_modules', '.bin');
      await mkdir(cached, { recursive: true });
      await symlink(BIN, join(cached, 'stream-posts'));
      const args = ['demo', '--count', '1', '--interval', '200ms', '--port', '0', '--json'];
      const path = `${bin}:${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`;
      // The test runner itself may run under npx: its marker must not leak into the other cases.
      const notNpx = { npm_lifecycle_event: undefined };
      const [plain, npx, npxCache, onPath] = await Promise.all([
        runToEnd(args, { env: notNpx }),
        runToEnd(args, { env: { npm_lifecycle_event: 'npx' } }),
        finish(shell(`${join(cached, 'stream-posts')} ${args.join(' ')}`, { env: { ...notNpx, PATH: path } })),
        finish(shell(`stream-posts ${args.join(' ')}`, { env: { ...notNpx, PATH: path } })),
      ]);
      const hint = (stderr: string) =>
        /In another terminal, .*:\n +STREAM_POSTS_API_KEY=sp_demo_reader_bob (.*) listen --url /.exec(stderr)?.[1];
      for (const result of [plain, npx, npxCache, onPath]) expect(result.code, result.stderr).toBe(0);
      expect(hint(plain.stderr)).toBe(`node ${relative(ROOT, BIN)}`);
      expect(hint(npx.stderr)).toBe('npx stream-posts');
      expect(hint(npxCache.stderr)).toBe('npx stream-posts');
      expect(hint(onPath.stderr)).toBe('stream-posts');
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
  it('on a terminal of 120 or 60 columns, breaks its lines between words (never in the URL), the command in lines that paste as one', async () => {
    for (const columns of [120, 60]) {
      const terminal = inTerminal(
        ['demo', '--count', '1', '--interval', '200ms', '--port', '0', '--json'],
        {},
        '',
        columns,
      );
      const { code } = await terminal.exit();
      expect(code, terminal.stdout).toBe(0);
      const screen = stripAnsi(terminal.stdout).replace(/\r/g, '');
      const url = /demo: serve on\s(ws:\/\/\S+),/.exec(screen)?.[1];
      // The first line too breaks between words only.
      const intro = screen.slice(0, screen.indexOf('In another terminal'));
      for (const line of intro.split('\n')) expect(line.length).toBeLessThanOrEqual(columns);
      const banner = /In another terminal, .*:\n((?:.* \\\n)*.*)\n/.exec(screen)?.[1];
      expect(url).toBeDefined();
      expect(banner).toBeDefined();
      const lines = banner!.split('\n');
      for (const line of lines) expect(line.length).toBeLessThanOrEqual(columns);
      expect(lines.filter((line) => line.includes(url!))).toHaveLength(1);
      expect(banner!.replace(/ \\\n\s*/g, ' ').trim()).toMatch(
        new RegExp(`^STREAM_POSTS_API_KEY=sp_demo_reader_bob .+ listen --url ${url!.replace(/[.]/g, '\\.')}$`),
      );
    }
  });
});
