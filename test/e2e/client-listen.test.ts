import { beforeAll, describe, expect, it } from 'vitest';
import { adminState, KEYS, publishToStream, restPosts } from '../support/harness.js';
import { cliCommandLine, client, ensureBuilt, finish, shell } from '../support/cli.js';
import { expectedTreeItem, hiddenView } from '../support/shapes.js';
import { jsonLines, postWithCli, subscribed, subscribedInProcess, waitForLines } from '../support/cli-output.js';
import { inProcess } from '../support/in-process.js';
import { inMs } from '../support/fixtures.js';
import { startServe, type Serve } from '../support/serve.js';

// One serve for the tests that only look at posts they publish themselves; tests run one at a time.
let shared: Serve;
beforeAll(async () => {
  ensureBuilt();
  shared = await startServe([], 0, 'file');
});

const created = (post: unknown) => ({ event: 'stream.post.created', data: post });
const released = (post: unknown) => ({ event: 'stream.post.released', data: post });

describe('post → listen --json and tree --json', () => {
  it('delivers every kind of post exactly as `post --json` returned it', async () => {
    const { url } = shared;
    const base = ['--url', url, '--api-key', KEYS.alice, '--json'];
    const [listen, tree] = await Promise.all([
      subscribedInProcess(['listen', ...base]),
      subscribedInProcess(['tree', ...base]),
    ]);

    const [raw, markdown, hidden, custom, rest, first] = await Promise.all([
      postWithCli(url, 'crypto-legal', 'Court filing: a plain rawtext body'),
      postWithCli(url, 'macro-wire', '**Rates** held, $BTC and $ETH up; see https://example.org/fed today', [
        '--markdown',
      ]),
      postWithCli(url, 'crypto-legal', 'Embargoed ruling on $SOL', ['--release-at', '+2s']),
      postWithCli(url, 'whale-alerts', '900 $ETH moved to cold storage', ['--custom-target', 'ETH']),
      postWithCli(url, 'macro-wire', 'published through the REST form', ['--via', 'rest']),
      postWithCli(url, 'crypto-legal', 'only once, whatever the retries', [
        '--idempotency-key',
        'e2e-idem-1',
        '--content-type',
        'rawtext',
      ]),
    ]);
    const repeat = await postWithCli(url, 'crypto-legal', 'only once, whatever the retries', [
      '--idempotency-key',
      'e2e-idem-1',
    ]);

    // What `post --json` says: the fields as sent, the full text even while hidden.
    expect(raw).toMatchObject({
      duplicate: false,
      post: {
        streamId: 'crypto-legal',
        streamName: 'Crypto Legal Updates',
        contentType: 'rawtext',
        text: 'Court filing: a plain rawtext body',
        hidden: false,
        releaseAt: null,
        customTarget: null,
      },
    });
    expect(markdown).toMatchObject({
      duplicate: false,
      post: { streamId: 'macro-wire', contentType: 'markdown', hidden: false },
    });
    expect(hidden).toMatchObject({
      duplicate: false,
      post: { text: 'Embargoed ruling on $SOL', hidden: true, contentType: 'rawtext' },
    });
    // +2s is read from the clock when `post` starts and rounded up to the second; the server
    // stamps createdAt once the post arrives, so the gap is under 3 s by however long the CLI
    // took to start and connect.
    const hiddenFor = Date.parse(hidden.post.releaseAt) - Date.parse(hidden.post.createdAt);
    expect(hiddenFor).toBeGreaterThan(0);
    expect(hiddenFor).toBeLessThanOrEqual(3_000);
    expect(custom).toMatchObject({
      duplicate: false,
      post: { streamId: 'whale-alerts', customTarget: 'ETH', text: '900 $ETH moved to cold storage' },
    });
    expect(rest).toMatchObject({
      duplicate: false,
      post: { streamId: 'macro-wire', text: 'published through the REST form', hidden: false },
    });
    expect(first.duplicate).toBe(false);
    expect(repeat).toEqual({ post: first.post, duplicate: true });

    const visible = [raw, markdown, custom, rest, first].map((result) => result.post);
    const releasedPost = { ...hidden.post, hidden: false };

    // listen --json: the server's events unchanged, one per line, the release last (2 s later).
    await waitForLines(listen, 7, 'six posts and one release');
    await listen.waitFor((out) => out.stdout.includes('"stream.post.released"'), 'the release');
    const finalEvents = jsonLines(listen.stdout);
    expect(finalEvents).toHaveLength(7);
    expect(finalEvents).toEqual(
      expect.arrayContaining([...visible.map(created), created(hiddenView(hidden.post)), released(releasedPost)]),
    );
    expect(finalEvents.at(-1)).toEqual(released(releasedPost));

    // tree --json: bare items; the hidden one first with an empty body, then with it under the same _id.
    await tree.waitFor((out) => out.stdout.split('\n').length - 1 >= 7, 'seven tree items');
    const items = jsonLines(tree.stdout);
    expect(items).toHaveLength(7);
    expect(items).toEqual(
      expect.arrayContaining([
        expectedTreeItem(raw.post, false),
        expectedTreeItem(markdown.post, false, {
          link: 'https://example.org/fed',
          coin: 'BTC',
          suggestions: [
            { coin: 'BTC', found: ['$BTC'] },
            { coin: 'ETH', found: ['$ETH'] },
          ],
        }),
        expectedTreeItem(custom.post, false, { coin: 'ETH', suggestions: [{ coin: 'ETH', found: ['$ETH'] }] }),
        expectedTreeItem(rest.post, false),
        expectedTreeItem(first.post, false),
        expectedTreeItem(hidden.post, true),
      ]),
    );
    expect(items.at(-1)).toEqual(
      expectedTreeItem(releasedPost, false, { coin: 'SOL', suggestions: [{ coin: 'SOL', found: ['$SOL'] }] }),
    );
    for (const item of items) expect(item).not.toHaveProperty('event');

    listen.interrupt('SIGINT');
    tree.interrupt('SIGINT');
    expect((await finish(listen)).code).toBe(0);
    expect((await finish(tree)).code).toBe(0);
  });
});

describe('custom targets decide who gets a post', () => {
  it('a SOL post reaches bob and the owner, not alice; an ETH post reaches alice and the owner, not bob', async () => {
    const { url } = shared;
    const listen = (key: string, count: number) =>
      subscribedInProcess(['listen', '--url', url, '--api-key', key, '--json', '--count', String(count)]);
    // alice follows whale-alerts with BTC, ETH; bob with SOL; newsdesk owns it.
    const [alice, bob, newsdesk] = await Promise.all([
      listen(KEYS.alice, 2),
      listen(KEYS.bob, 2),
      listen(KEYS.newsdesk, 3),
    ]);

    const sol = await publishToStream(url, 'whale-alerts', '250,000 $SOL unstaked', { customTarget: 'SOL' });
    const eth = await publishToStream(url, 'whale-alerts', '40,000 $ETH withdrawn', { customTarget: 'ETH' });
    // Published after the others, seen by everyone: once it is shown, the earlier ones would have been too.
    const after = await publishToStream(url, 'macro-wire', 'payrolls beat expectations');

    const ids = async (cli: typeof alice) => {
      const { code, stdout } = await finish(cli);
      expect(code).toBe(0);
      return jsonLines(stdout).map((event) => event.data.id);
    };
    expect(await ids(alice)).toEqual([eth.post.id, after.post.id]);
    expect(await ids(bob)).toEqual([sol.post.id, after.post.id]);
    expect(await ids(newsdesk)).toEqual([sol.post.id, eth.post.id, after.post.id]);
  });
});

describe('what the views show (plain, piped)', () => {
  it('--utc: times in UTC, marked so, in listen and tree', async () => {
    const serve = await startServe();
    const sent = await publishToStream(serve.url, 'macro-wire', 'a post to date');
    const time = new Date(sent.post.createdAt).toISOString().slice(11, 19);
    for (const command of ['listen', 'tree']) {
      const args = [command, '--url', serve.url, '--api-key', KEYS.bob, '--streams', 'macro-wire', '--utc'];
      const result = await finish(inProcess([...args, '--last', '1', '--idle-timeout', '500ms', '-q']));
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.split('\n')[0], command).toMatch(new RegExp(`^${time} UTC (\\[Macro Wire\\]|Macro Wire)$`));
    }
  });

  it('tree: a hidden post is locked until its release time, and its release is dated at the release', async () => {
    const serve = await startServe();
    const tree = await subscribedInProcess([
      'tree',
      '--url',
      serve.url,
      '--api-key',
      KEYS.bob,
      '--streams',
      'macro-wire',
      '--utc',
      '--count',
      '2',
    ]);
    const hidden = await publishToStream(serve.url, 'macro-wire', 'embargoed figures', { releaseAt: inMs(1_500) });
    const { code, stdout } = await finish(tree);
    expect(code).toBe(0);
    const releaseAt = hidden.post.releaseAt as string;
    const created = new Date(hidden.post.createdAt).toISOString().slice(11, 19);
    const released = new Date(releaseAt).toISOString().slice(11, 19);
    expect(stdout.split('\n')).toEqual([
      `${created} UTC [Macro Wire]`,
      `[locked until ${new Date(releaseAt).toISOString()}]`,
      '',
      `${released} UTC [Macro Wire] [released]`,
      'embargoed figures',
      '',
      '',
    ]);
  });
});

describe('listen options', () => {
  it('--count N exits 0 after N posts; a release counts as one', async () => {
    const { url } = shared;
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      url,
      '--api-key',
      KEYS.bob,
      '--json',
      '--count',
      '2',
      '--streams',
      'macro-wire',
    ]);
    const hidden = await publishToStream(url, 'macro-wire', 'hidden for a second', { releaseAt: inMs(1_000) });
    const { code, stdout } = await finish(listen);
    expect(code).toBe(0);
    expect(jsonLines(stdout)).toEqual([created(hiddenView(hidden.post)), released({ ...hidden.post, hidden: false })]);
  });

  it('--count N counts live posts only: the --last history is shown first, then exactly N live posts, even when more arrive in one read', async () => {
    const serve = await startServe();
    for (let i = 1; i <= 5; i += 1) await publishToStream(serve.url, 'macro-wire', `old ${i}`);
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      serve.url,
      '--api-key',
      KEYS.bob,
      '--json',
      '--last',
      '5',
      '--count',
      '2',
      '--streams',
      'macro-wire',
    ]);
    await waitForLines(listen, 5, 'the five posts of history');
    await Promise.all(['new 1', 'new 2', 'new 3'].map((text) => publishToStream(serve.url, 'macro-wire', text)));
    const { code, stdout } = await finish(listen);
    expect(code).toBe(0);
    const texts = jsonLines(stdout).map((line) => (line as { data: { text: string } }).data.text);
    expect(texts.slice(0, 5)).toEqual(['old 1', 'old 2', 'old 3', 'old 4', 'old 5']);
    expect(texts).toHaveLength(7);
    expect(texts.slice(5).every((text) => text.startsWith('new '))).toBe(true);
  });

  it('one subscription per listen: serve logs one "subscribed" and /_admin/state counts one', async () => {
    // Not --quiet: serve's log (on stderr) is what is looked at.
    const serveCli = client(['serve', '--port', '0']);
    const url = await serveCli.url();
    const subscribedLines = () => serveCli.stderr.split('\n').filter((line) => / info +subscribed /.test(line));
    const listen = await subscribed(['listen', '--url', url, '--api-key', KEYS.alice, '--last', '2']);
    // A post published now is live: whatever the listener sent before it has been handled.
    await publishToStream(url, 'macro-wire', 'after the subscription');
    await listen.waitFor((out) => out.stdout.includes('after the subscription'), 'the live post');
    expect(subscribedLines()).toHaveLength(1);
    expect(subscribedLines()[0]).toContain('requestId=subscribe');
    expect((await adminState({ httpUrl: url.replace(/^ws/, 'http') })).subscriptions).toBe(1);
    // A real Ctrl-C to a process of its own: exit 0.
    listen.child.kill('SIGINT');
    expect((await listen.exit()).code).toBe(0);
  });

  it('--idle-timeout exits 0 once no post arrived for that long, after showing what came', async () => {
    const { url } = shared;
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      url,
      '--api-key',
      KEYS.bob,
      '--json',
      '--idle-timeout',
      '800ms',
    ]);
    const sent = await publishToStream(url, 'macro-wire', 'before the quiet');
    const { code, stdout } = await finish(listen);
    expect(code).toBe(0);
    expect(jsonLines(stdout)).toEqual([created(sent.post)]);
  });

  it('--idle-timeout also ends a listener that never gets a post', async () => {
    const { url } = shared;
    const listen = await subscribedInProcess([
      'tree',
      '--url',
      url,
      '--api-key',
      KEYS.alice,
      '--json',
      '--idle-timeout',
      '300ms',
    ]);
    const { code, stdout } = await finish(listen);
    expect(code).toBe(0);
    expect(stdout).toBe('');
  });

  it('--last N shows the recent history of each stream, the same posts REST lists, respecting custom targets', async () => {
    const serve = await startServe();
    const run = async (key: string, n: number, streams: string) => {
      const cli = await subscribedInProcess([
        'listen',
        '--url',
        serve.url,
        '--api-key',
        key,
        '--json',
        '--last',
        String(n),
        '--streams',
        streams,
        '--idle-timeout',
        '600ms',
      ]);
      const { code, stdout } = await finish(cli);
      expect(code).toBe(0);
      return jsonLines(stdout);
    };
    const [legal, bobWhales, aliceWhales, ownerWhales] = await Promise.all([
      run(KEYS.alice, 2, 'crypto-legal'),
      run(KEYS.bob, 5, 'whale-alerts'),
      run(KEYS.alice, 5, 'whale-alerts'),
      run(KEYS.newsdesk, 5, 'whale-alerts'),
    ]);
    // Oldest first, exactly the posts REST returns newest first.
    const restLegal = await restPosts(serve, 'crypto-legal', KEYS.alice);
    expect(legal).toEqual(restLegal.slice(0, 2).reverse().map(created));
    const restWhales = (await restPosts(serve, 'whale-alerts')).reverse();
    expect(restWhales.map((post) => post.customTarget)).toEqual(['BTC', 'SOL']);
    expect(ownerWhales).toEqual(restWhales.map(created));
    expect(bobWhales).toEqual(restWhales.filter((post) => post.customTarget === 'SOL').map(created));
    expect(aliceWhales).toEqual(restWhales.filter((post) => post.customTarget === 'BTC').map(created));
  });

  it('--streams: empty means every stream the user follows; spaces around ids are ignored; -q leaves stderr empty', async () => {
    const { url } = shared;
    const run = (streams: string, flags: string[] = []) =>
      finish(
        inProcess([
          'listen',
          '--url',
          url,
          '--api-key',
          KEYS.bob,
          '--streams',
          streams,
          '--idle-timeout',
          '200ms',
          ...flags,
        ]),
      );
    const [empty, commas, spaced, quiet] = await Promise.all([
      run(''),
      run(' , '),
      run(' whale-alerts , macro-wire '),
      run('macro-wire', ['-q']),
    ]);
    for (const result of [empty, commas, spaced, quiet]) expect(result.code, result.stderr).toBe(0);
    expect(empty.stderr).toMatch(/^stream-posts: subscribed: macro-wire, whale-alerts$/m);
    expect(commas.stderr).toMatch(/^stream-posts: subscribed: macro-wire, whale-alerts$/m);
    expect(spaced.stderr).toMatch(/^stream-posts: subscribed: (whale-alerts, macro-wire|macro-wire, whale-alerts)$/m);
    expect(quiet.stderr).toBe('');
  });

  it('--bell rings once per post shown, on stderr; stdout keeps only the posts', async () => {
    const { url } = shared;
    const args = [
      'listen',
      '--url',
      url,
      '--api-key',
      KEYS.bob,
      '--json',
      '--last',
      '1',
      '--count',
      '1',
      '--streams',
      'macro-wire',
    ];
    const [bell, quiet] = await Promise.all([subscribedInProcess([...args, '--bell']), subscribedInProcess(args)]);
    await Promise.all([bell, quiet].map((cli) => waitForLines(cli, 1, 'the post of history')));
    await publishToStream(url, 'macro-wire', 'ring for this one');
    const [ringing, silent] = await Promise.all([finish(bell), finish(quiet)]);
    expect(ringing.code).toBe(0);
    // One for the post of history, one for the live post.
    expect(ringing.stderr.split('\u0007')).toHaveLength(3);
    expect(jsonLines(ringing.stdout)).toHaveLength(2);
    expect(silent.stderr).not.toContain('\u0007');
  });

  it('a reader that goes away (listen | head -n 1) is a normal end: exit 0', async () => {
    const { url } = shared;
    const listenArgs = ['listen', '--url', url, '--api-key', KEYS.bob, '--json', '--streams', 'macro-wire'];
    const pipeline = shell(`${cliCommandLine(listenArgs)} | head -n 1; echo "listen exit: \${PIPESTATUS[0]}"`);
    await pipeline.waitFor((out) => /^stream-posts: subscribed: /m.test(out.stderr), 'the subscription');
    const first = await publishToStream(url, 'macro-wire', 'the one line head reads');
    await pipeline.waitFor((out) => out.stdout.includes(first.post.id), 'the line through head');
    // head has gone: the next write fails with EPIPE, which ends listen normally.
    await publishToStream(url, 'macro-wire', 'nobody reads this one');
    const { code, stdout } = await finish(pipeline);
    expect(code).toBe(0);
    expect(stdout).toBe(`${JSON.stringify(created(first.post))}\nlisten exit: 0\n`);
  });

  it('listen and tree end as soon as their reader goes away (| head -2), with no post published after', async () => {
    const { url } = shared;
    // Two posts of history and head -2: the last line is written before head goes, and no
    // write follows that could fail with EPIPE; only watching the pipe can end the command.
    await publishToStream(url, 'macro-wire', 'the first of two lines head reads');
    await publishToStream(url, 'macro-wire', 'the second of two lines head reads');
    const exactly = ['--streams', 'macro-wire', '--last', '2'];
    const runs: [string, string[]][] = [
      ['listen', exactly],
      ['tree', exactly],
      ['listen', ['--last', '5']],
    ];
    const pipelines = runs.map(([command, extra]) => {
      const args = [command, '--url', url, '--api-key', KEYS.alice, '--json', ...extra];
      return shell(`${cliCommandLine(args)} | head -2; echo "${command} exit: \${PIPESTATUS[0]}"`);
    });
    // The shell ends only once both sides of its pipe have: the exit is the proof, whatever it took.
    const results = await Promise.all(pipelines.map((pipeline) => finish(pipeline)));
    for (const [index, [command]] of runs.entries()) {
      const { code, stdout, stderr } = results[index]!;
      expect(code, stderr).toBe(0);
      const lines = stdout.split('\n');
      expect(lines.slice(2), stderr).toEqual([`${command} exit: 0`, '']);
      for (const line of lines.slice(0, 2)) expect(() => JSON.parse(line), line).not.toThrow();
    }
  });

  it('--match shows only posts whose text matches, case-insensitively', async () => {
    const { url } = shared;
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      url,
      '--api-key',
      KEYS.alice,
      '--json',
      '--match',
      'bitcoin|\\$btc',
      '--count',
      '2',
    ]);
    const first = await publishToStream(url, 'macro-wire', 'BITCOIN rallies into the close');
    await publishToStream(url, 'macro-wire', 'ether slides, nothing else moves');
    const second = await publishToStream(url, 'whale-alerts', '1,000 $btc moved', { customTarget: 'BTC' });
    const { code, stdout } = await finish(listen);
    expect(code).toBe(0);
    expect(jsonLines(stdout)).toEqual([created(first.post), created(second.post)]);
  });
});
