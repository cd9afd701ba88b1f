import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminState, KEYS, publishToStream, restPosts } from '../support/harness.js';
import { until } from '../support/poll.js';
import { client, ensureBuilt, finish, type CliProcess } from '../support/cli.js';
import { expectCleanError, jsonLines, subscribedInProcess, waitForLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { expectedTreeItem } from '../support/shapes.js';
import { inMs } from '../support/fixtures.js';
import { startServe } from '../support/serve.js';
import { proxyTo } from '../support/proxy.js';

beforeAll(ensureBuilt);

const created = (post: unknown) => ({ event: 'stream.post.created', data: post });

const reconnectedLine = /^stream-posts: reconnected: /m;

let clockShift: string | undefined;
/** A module for NODE_OPTIONS=--import that moves Date.now by E2E_CLOCK_OFFSET_MS: a client clock that is off. */
async function clockShiftModule(): Promise<string> {
  if (clockShift) return clockShift;
  const dir = await mkdtemp(join(tmpdir(), 'stream-posts-clock-'));
  clockShift = join(dir, 'shift-clock.mjs');
  await writeFile(
    clockShift,
    'const offset = Number(process.env.E2E_CLOCK_OFFSET_MS ?? 0);\nconst realNow = Date.now;\nDate.now = () => realNow() + offset;\n',
  );
  return clockShift;
}
afterAll(async () => {
  if (clockShift) await rm(dirname(clockShift), { recursive: true, force: true });
});

describe('listen across a drop', () => {
  it('a serve restart on the same port: posts before, while down and after are each printed once, and the seed posts the new serve gives again are not', async () => {
    const first = await startServe();
    const proxy = await proxyTo(first.port);
    const args = ['listen', '--api-key', KEYS.alice, '--json'];
    // `direct` reconnects whenever it can; `held` only once C is on the new serve, so C reaches it through the replay.
    const [direct, held] = await Promise.all([
      subscribedInProcess([...args, '--url', first.url]),
      subscribedInProcess([...args, '--url', proxy.url, '-v']),
    ]);
    const listeners = [direct, held];
    const a = await publishToStream(first.url, 'crypto-legal', 'A: before the restart');
    const b = await publishToStream(first.url, 'macro-wire', 'B: before the restart');
    await Promise.all(listeners.map((cli) => waitForLines(cli, 2)));

    proxy.refuse(true);
    first.cli.child.kill('SIGTERM');
    expect((await first.cli.exit()).code).toBe(0);
    await Promise.all(
      listeners.map((cli) => cli.waitFor((out) => /reconnecting in/.test(out.stderr), 'the reconnecting status line')),
    );
    const second = await startServe([], first.port);
    const c = await publishToStream(second.url, 'crypto-legal', 'C: on the new serve');
    proxy.refuse(false);
    await Promise.all(
      listeners.map((cli) => cli.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnection')),
    );
    await Promise.all(listeners.map((cli) => cli.waitFor((out) => out.stdout.includes(c.post.id), 'C')));
    const d = await publishToStream(second.url, 'macro-wire', 'D: after the reconnection');
    const e = await publishToStream(second.url, 'whale-alerts', 'E: after the reconnection', { customTarget: 'ETH' });
    await Promise.all(listeners.map((cli) => cli.waitFor((out) => out.stdout.includes(e.post.id), 'E')));

    const mine = [a, b, c, d, e].map((result) => result.post);
    for (const cli of listeners) {
      const events = jsonLines(cli.stdout);
      // The seed posts the new serve replays are the ones the listeners already knew: nothing else is printed.
      expect(events).toEqual(mine.map(created));
    }
    // -v says what the replay asks for, not the --last of the first subscription.
    expect(held.stderr).toMatch(/^stream-posts: subscribed: .* \(on-stream-post, lastPosts 0\)$/m);
    expect(held.stderr).toMatch(
      /^stream-posts: reconnected: .* \(on-stream-post, replaying lastPosts 100, posts not shown yet only\)$/m,
    );
  });

  it('100 posts, then listen, then a serve restart: the new serve’s older posts, never seen, are not printed or counted as live', async () => {
    const first = await startServe();
    const lines = Array.from({ length: 100 }, (_, i) => JSON.stringify({ content: `before listen ${i + 1}` }));
    const batch = await runInProcess(
      ['post', '--batch', '--url', first.url, '--api-key', KEYS.cryptoLegal, '--stream', 'crypto-legal'],
      { stdin: `${lines.join('\n')}\n` },
    );
    expect(batch.code, batch.stderr).toBe(0);
    // Its history is the last 100 of each stream: the seed posts of crypto-legal are older, so never seen.
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      first.url,
      '--api-key',
      KEYS.alice,
      '--json',
      '--count',
      '1',
    ]);
    first.cli.child.kill('SIGTERM');
    expect((await first.cli.exit()).code).toBe(0);
    await listen.waitFor((out) => /reconnecting in/.test(out.stderr), 'the reconnecting status line');
    const second = await startServe([], first.port);
    await listen.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnection');
    const live = await publishToStream(second.url, 'crypto-legal', 'live on the new serve');
    const { code, stdout, stderr } = await finish(listen);
    expect(code, stderr).toBe(0);
    // --count 1 counted the one live post, not a replayed seed post.
    expect(jsonLines(stdout)).toEqual([created(live.post)]);
  });

  it('a dropped connection to a serve that stays up: the replay repeats nothing and loses nothing (listen and tree)', async () => {
    const serve = await startServe();
    const proxy = await proxyTo(serve.port);
    const base = ['--url', proxy.url, '--api-key', KEYS.bob, '--json'];
    const [listen, tree] = await Promise.all([
      subscribedInProcess(['listen', ...base]),
      subscribedInProcess(['tree', ...base]),
    ]);
    const a = await publishToStream(serve.url, 'macro-wire', 'A: before the drop');
    const b = await publishToStream(serve.url, 'whale-alerts', 'B: before the drop, for SOL readers', {
      customTarget: 'SOL',
    });
    await Promise.all([waitForLines(listen, 2), waitForLines(tree, 2)]);

    proxy.refuse(true);
    proxy.cut();
    await Promise.all(
      [listen, tree].map((cli) =>
        cli.waitFor((out) => /reconnecting in/.test(out.stderr), 'the reconnecting status line'),
      ),
    );
    const c = await publishToStream(serve.url, 'macro-wire', 'C: while the connection is down');
    proxy.refuse(false);
    await Promise.all(
      [listen, tree].map((cli) => cli.waitFor((out) => out.stdout.includes(c.post.id), 'C from the replay')),
    );
    const d = await publishToStream(serve.url, 'macro-wire', 'D: after the reconnection');
    await Promise.all([listen, tree].map((cli) => cli.waitFor((out) => out.stdout.includes(d.post.id), 'D')));

    const mine = [a, b, c, d].map((result) => result.post);
    expect(jsonLines(listen.stdout)).toEqual(mine.map(created));
    expect(jsonLines(tree.stdout)).toEqual(mine.map((post) => expectedTreeItem(post, false)));
    for (const cli of [listen, tree]) expect(cli.stderr).toMatch(reconnectedLine);
  });

  it('a release that happens while the connection is down is printed as a release after reconnecting', async () => {
    const serve = await startServe();
    const proxy = await proxyTo(serve.port);
    const base = ['--url', proxy.url, '--api-key', KEYS.alice, '--json', '--streams', 'crypto-legal'];
    const [listen, tree] = await Promise.all([
      subscribedInProcess(['listen', ...base]),
      subscribedInProcess(['tree', ...base]),
    ]);
    const hidden = await publishToStream(serve.url, 'crypto-legal', 'released during the outage $SOL', {
      releaseAt: inMs(1_000),
    });
    await Promise.all([waitForLines(listen, 1), waitForLines(tree, 1)]);

    proxy.refuse(true);
    proxy.cut();
    // Wait out the release on the service while nothing reaches the listeners.
    await until(async () => (await restPosts(serve, 'crypto-legal'))[0]?.hidden === false, 'the release');
    proxy.refuse(false);
    const after = await (async () => {
      await Promise.all(
        [listen, tree].map((cli) => cli.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnection')),
      );
      return publishToStream(serve.url, 'crypto-legal', 'after the outage');
    })();
    await Promise.all(
      [listen, tree].map((cli) =>
        cli.waitFor((out) => out.stdout.includes(after.post.id), 'the post after the outage'),
      ),
    );

    const releasedPost = { ...hidden.post, hidden: false };
    expect(jsonLines(listen.stdout)).toEqual([
      created({ ...hidden.post, text: null }),
      { event: 'stream.post.released', data: releasedPost },
      created(after.post),
    ]);
    expect(jsonLines(tree.stdout)).toEqual([
      expectedTreeItem(hidden.post, true),
      expectedTreeItem(releasedPost, false, { coin: 'SOL', suggestions: [{ coin: 'SOL', found: ['$SOL'] }] }),
      expectedTreeItem(after.post, false),
    ]);
  });

  /**
   * Starts two listeners on crypto-legal through a proxy right after a post was
   * published, drops them, publishes one post while they are away and one after.
   */
  async function historyAcrossADrop(lasts: string[]) {
    const serve = await startServe();
    const proxy = await proxyTo(serve.port);
    const before = await publishToStream(serve.url, 'crypto-legal', 'published just before anyone listened');
    const listeners = await Promise.all(
      lasts.map((last) =>
        subscribedInProcess([
          'listen',
          '--url',
          proxy.url,
          '--api-key',
          KEYS.alice,
          '--json',
          '--streams',
          'crypto-legal',
          '--last',
          last,
        ]),
      ),
    );
    await Promise.all(listeners.map((cli, i) => waitForLines(cli, Number(lasts[i]))));

    proxy.refuse(true);
    proxy.cut();
    await Promise.all(
      listeners.map((cli) => cli.waitFor((out) => /reconnecting in/.test(out.stderr), 'the reconnecting status line')),
    );
    const during = await publishToStream(serve.url, 'crypto-legal', 'published during the outage');
    proxy.refuse(false);
    await Promise.all(
      listeners.map((cli) => cli.waitFor((out) => out.stdout.includes(during.post.id), 'the post from the outage')),
    );
    const after = await publishToStream(serve.url, 'crypto-legal', 'published after the outage');
    await Promise.all(
      listeners.map((cli) => cli.waitFor((out) => out.stdout.includes(after.post.id), 'the post after')),
    );
    return { serve, listeners, before: before.post, during: during.post, after: after.post };
  }

  it('--last 1 then a drop: the one post of history, then only newer posts, never the older history the replay carries', async () => {
    const { serve, listeners, before, during, after } = await historyAcrossADrop(['1', '2']);
    const [one, two] = listeners;
    const stored = await restPosts(serve, 'crypto-legal', KEYS.alice);
    const previous = stored[stored.findIndex((post) => post.id === before.id) + 1];
    expect(previous).toBeDefined();
    expect(jsonLines(one!.stdout)).toEqual([created(before), created(during), created(after)]);
    expect(jsonLines(two!.stdout)).toEqual([created(previous), created(before), created(during), created(after)]);
  });

  it('--last 0 then a drop: a post published just before listen started is not shown after the reconnect', async () => {
    // A cut-off by clock (first connection - a few seconds of allowed skew) would let this post through.
    const { listeners, during, after } = await historyAcrossADrop(['0']);
    expect(jsonLines(listeners[0]!.stdout)).toEqual([created(during), created(after)]);
  });

  it('a listener whose clock runs ahead of the service still shows posts after a reconnect, having shown none before', async () => {
    // A replay cut-off taken from the local clock would take every post after the reconnect
    // (live ones included) for old history here, and show nothing ever again.
    const serve = await startServe();
    const proxy = await proxyTo(serve.port);
    const clockAhead = { NODE_OPTIONS: `--import=${await clockShiftModule()}`, E2E_CLOCK_OFFSET_MS: '60000' };
    const args = ['--api-key', KEYS.alice, '--json', '--streams', 'macro-wire'];
    // The control: the same clock, no drop.
    const [listen, control] = await Promise.all([
      subscribedInProcess(['listen', '--url', proxy.url, ...args], { env: clockAhead }),
      subscribedInProcess(['listen', '--url', serve.url, ...args], { env: clockAhead }),
    ]);
    proxy.refuse(true);
    proxy.cut();
    await listen.waitFor((out) => /reconnecting in/.test(out.stderr), 'the reconnecting status line');
    const during = await publishToStream(serve.url, 'macro-wire', 'published during the outage');
    proxy.refuse(false);
    await listen.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnection');
    const after = await publishToStream(serve.url, 'macro-wire', 'published after the reconnection');
    const marker = await publishToStream(serve.url, 'macro-wire', 'last one');
    await control.waitFor((out) => out.stdout.includes(marker.post.id), 'the last post without a drop');
    const expected = [created(during.post), created(after.post), created(marker.post)];
    expect(jsonLines(control.stdout)).toEqual(expected);
    await listen.waitFor((out) => out.stdout.includes(marker.post.id), 'the last post after the drop', 2_000);
    expect(jsonLines(listen.stdout)).toEqual(expected);
  });

  it('with --no-reconnect, a drop ends listen with exit 3 and says why', async () => {
    const serve = await startServe();
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      serve.url,
      '--api-key',
      KEYS.alice,
      '--json',
      '--no-reconnect',
    ]);
    serve.cli.child.kill('SIGTERM');
    const { code, stderr, stdout } = await finish(listen);
    expect(code).toBe(3);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/1001/);
    expectCleanError(stderr);
  });
});

describe('post --batch across drops', () => {
  it('resends unacknowledged posts after two cuts and publishes each line exactly once', async () => {
    const serve = await startServe();
    const proxy = await proxyTo(serve.port);
    const before = (await adminState(serve)).posts;
    const cli = client(
      [
        'post',
        '--batch',
        '--url',
        proxy.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'crypto-legal',
        '--window',
        '16',
        '-v',
      ],
      { stdin: 'pipe' },
    );
    const total = 300;
    const feed = (from: number, to: number) => {
      let text = '';
      for (let i = from; i <= to; i += 1) text += `${JSON.stringify({ content: `drop test ${i}` })}\n`;
      cli.child.stdin!.write(text);
    };
    const results = (process: CliProcess) => process.stdout.split('\n').length - 1;

    /** Lets the service take posts whose acks never reach the client, then resets the connection. */
    const cutWithAcksInFlight = async () => {
      proxy.hold();
      await until(
        async () => (await adminState(serve)).posts - before > results(cli),
        'posts published whose acks are held back',
      );
      proxy.cut();
    };

    feed(1, 100);
    await cli.waitFor((out) => out.stdout.split('\n').length - 1 >= 50, '50 results');
    await cutWithAcksInFlight();
    feed(101, 200);
    await cli.waitFor((out) => out.stdout.split('\n').length - 1 >= 150, '150 results after the first cut');
    await cutWithAcksInFlight();
    feed(201, total);
    cli.child.stdin!.end();

    const { code, stdout, stderr } = await finish(cli, 15_000);
    expect(code, stderr).toBe(0);
    expect(proxy.connections).toBeGreaterThanOrEqual(3);
    const lines = jsonLines(stdout);
    expect(lines).toHaveLength(total);
    lines.forEach((result, i) => {
      expect(result).toMatchObject({
        line: i + 1,
        duplicate: false,
        post: { streamId: 'crypto-legal', text: `drop test ${i + 1}` },
      });
    });
    expect(new Set(lines.map((result) => result.post.id)).size).toBe(total);
    // Exactly one post per line on the service: a resend of a post it already had was deduplicated.
    expect((await adminState(serve)).posts - before).toBe(total);
    // What the service holds under each text is the post that line reported.
    const reported = new Map(lines.map((result) => [result.post.text, result.post]));
    const newest = await restPosts(serve, 'crypto-legal');
    expect(newest).toHaveLength(100);
    for (const post of newest) expect(post).toEqual(reported.get(post.text));
  });
});
