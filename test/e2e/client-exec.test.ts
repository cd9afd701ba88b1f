import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectedTreeItem, hiddenView } from '../support/shapes.js';
import { finish, runToEnd } from '../support/cli.js';
import { inMs, wirePost } from '../support/fixtures.js';
import { scriptedService } from '../support/hostile.js';
import { jsonLines, subscribed, waitForLines } from '../support/cli-output.js';
import { KEYS, publishToStream } from '../support/harness.js';
import { cliFixture } from '../support/serve.js';

const fixture = cliFixture('exec');

/**
 * The hook under test: records each run (its STREAM_POSTS_* variables, whether the key in
 * $HOOK_DIR/secret is anywhere in its environment, its stdin) in $HOOK_DIR/log. A second run starting while one
 * is still going is recorded as CONCURRENT. A post whose text says "block here" waits for a
 * line on $HOOK_DIR/fifo; "fail with 3" exits 3; a hidden post kills the command with SIGSEGV.
 */
const HOOK = `mkdir "$HOOK_DIR/lock" 2>/dev/null || echo CONCURRENT >> "$HOOK_DIR/log"
input=$(cat)
case "$input" in *'block here'*) read go < "$HOOK_DIR/fifo" ;; esac
{
  echo "run"
  env | grep '^STREAM_POSTS_' | sort
  if env | grep -qF -f "$HOOK_DIR/secret"; then echo "key seen"; fi
  printf 'stdin %s\n' "$input"
} >> "$HOOK_DIR/log"
rmdir "$HOOK_DIR/lock"
case "$input" in *'fail with 3'*) exit 3 ;; esac
if [ "$STREAM_POSTS_HIDDEN" = true ] && [ "$STREAM_POSTS_FORMAT" = post ]; then kill -SEGV $$; fi
echo "hook done $STREAM_POSTS_POST_ID" >&2
`;

interface Run {
  env: Record<string, string>;
  stdin: unknown;
  keySeen: boolean;
}

/** The log as runs, in the order they happened. */
async function runsIn(dir: string): Promise<{ runs: Run[]; concurrent: boolean }> {
  const log = await readFile(join(dir, 'log'), 'utf8');
  const runs: Run[] = [];
  for (const record of log.split(/^run\n/m).slice(1)) {
    const lines = record.trimEnd().split('\n');
    const env = Object.fromEntries(
      lines.filter((line) => line.startsWith('STREAM_POSTS_')).map((line) => line.split(/=(.*)/s).slice(0, 2)),
    );
    const stdin = lines.find((line) => line.startsWith('stdin '))!.slice('stdin '.length);
    runs.push({ env, stdin: JSON.parse(stdin), keySeen: lines.includes('key seen') });
  }
  return { runs, concurrent: log.includes('CONCURRENT') };
}

async function hookDir(name: string, secret: string): Promise<string> {
  const dir = join(fixture.tmp, name);
  await mkdir(dir);
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  await writeFile(join(dir, 'hook.sh'), HOOK);
  await writeFile(join(dir, 'secret'), `${secret}\n`);
  return dir;
}

describe('listen --exec', () => {
  it('runs the command for each post (history too) in order, one at a time, with the post on stdin and STREAM_POSTS_* set; failures are reported and the feed goes on', async () => {
    const dir = await hookDir('listen', KEYS.alice);
    const history = await publishToStream(fixture.serve.url, 'crypto-legal', 'exec: a post from before');
    const listen = await subscribed(
      [
        'listen',
        '--url',
        fixture.serve.url,
        '--streams',
        'crypto-legal',
        '--last',
        '1',
        '--count',
        '3',
        '--json',
        '--exec',
        `sh ${join(dir, 'hook.sh')}`,
      ],
      { env: { STREAM_POSTS_API_KEY: KEYS.alice, SAME_KEY_ELSEWHERE: KEYS.alice, HOOK_DIR: dir } },
    );
    const blocking = await publishToStream(
      fixture.serve.url,
      'crypto-legal',
      'exec: block here until the test says so',
    );
    const failing = await publishToStream(fixture.serve.url, 'crypto-legal', 'exec: fail with 3');
    const hidden = await publishToStream(fixture.serve.url, 'crypto-legal', 'exec: hidden, and its command crashes', {
      releaseAt: inMs(3_600_000),
    });
    // The second post's command is blocked: the feed is read and printed all the same.
    const lines = await waitForLines(listen, 4);
    expect(lines.map((line) => line.data.id)).toEqual([
      history.post.id,
      blocking.post.id,
      failing.post.id,
      hidden.post.id,
    ]);
    await listen.waitFor((out) => out.stderr.includes(`hook done ${history.post.id}`), 'the first command');
    expect((await runsIn(dir)).runs).toHaveLength(1);
    await writeFile(join(dir, 'fifo'), 'go\n');
    const result = await finish(listen);
    expect(result.code, result.stderr).toBe(0);

    const { runs, concurrent } = await runsIn(dir);
    expect(concurrent).toBe(false);
    // Each command read the line `--json` printed for its post.
    expect(runs.map((run) => run.stdin)).toEqual(lines);
    expect(runs.map((run) => run.env['STREAM_POSTS_POST_ID'])).toEqual(lines.map((line) => line.data.id));
    expect(runs[3]!.env).toEqual({
      STREAM_POSTS_EVENT: 'created',
      STREAM_POSTS_FORMAT: 'post',
      STREAM_POSTS_POST_ID: hidden.post.id,
      STREAM_POSTS_STREAM_ID: 'crypto-legal',
      STREAM_POSTS_STREAM_NAME: 'Crypto Legal Updates',
      STREAM_POSTS_HIDDEN: 'true',
      STREAM_POSTS_CREATED_AT: hidden.post.createdAt,
      STREAM_POSTS_RELEASE_AT: hidden.post.releaseAt,
      STREAM_POSTS_CONTENT_TYPE: 'rawtext',
      STREAM_POSTS_CUSTOM_TARGET: '',
    });
    expect(runs[0]!.env['STREAM_POSTS_HIDDEN']).toBe('false');
    expect(runs[0]!.env['STREAM_POSTS_RELEASE_AT']).toBe('');
    expect(result.stderr).toContain(
      `stream-posts: warning: --exec: the command exited with code 3 (post ${failing.post.id}); going on with the next post\n`,
    );
    expect(result.stderr).toContain(
      `stream-posts: warning: --exec: the command exited with code 139 (killed by SIGSEGV) (post ${hidden.post.id}); going on with the next post\n`,
    );
    expect(result.stderr).toContain(`hook done ${history.post.id}\n`);
    expect(result.stderr).toContain(`hook done ${blocking.post.id}\n`);
    expect(result.stdout).toBe(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  });

  it('never gives the command the API key, under any name, from a key file either', async () => {
    const keyFile = join(fixture.tmp, 'bob.key');
    await writeFile(keyFile, `${KEYS.bob}\n`);
    await publishToStream(fixture.serve.url, 'macro-wire', 'exec: the key stays out');
    const ways = [
      { args: [], env: { STREAM_POSTS_API_KEY: KEYS.bob, COPY: `prefix-${KEYS.bob}` } },
      { args: ['--api-key', KEYS.bob], env: {} },
      { args: ['--api-key-file', keyFile], env: {} },
    ];
    const dirs = await Promise.all(ways.map((_, index) => hookDir(`secret-${index}`, KEYS.bob)));
    const results = await Promise.all(
      ways.map(({ args, env }, index) =>
        runToEnd(
          [
            'listen',
            '--url',
            fixture.serve.url,
            '--streams',
            'macro-wire',
            '--last',
            '1',
            '--idle-timeout',
            '1s',
            '-q',
            '--exec',
            `sh ${join(dirs[index]!, 'hook.sh')}`,
            ...args,
          ],
          { env: { ...env, HOOK_DIR: dirs[index] } },
        ),
      ),
    );
    for (const [index, result] of results.entries()) {
      expect(result.code, result.stderr).toBe(0);
      const { runs } = await runsIn(dirs[index]!);
      expect(runs).toHaveLength(1);
      expect(runs[0]!.env['STREAM_POSTS_STREAM_ID']).toBe('macro-wire');
      expect(runs[0]!.keySeen).toBe(false);
      expect(runs[0]!.env['STREAM_POSTS_API_KEY']).toBeUndefined();
    }
  });

  it('a command killed by a signal is reported with it', async () => {
    await publishToStream(fixture.serve.url, 'macro-wire', 'exec: the shell kills itself');
    const result = await runToEnd([
      'listen',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.bob,
      '--streams',
      'macro-wire',
      '--last',
      '1',
      '--idle-timeout',
      '1s',
      '-q',
      '--exec',
      'kill -TERM $$',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /^stream-posts: warning: --exec: the command was killed by SIGTERM \(post \w+\); going on with the next post\n$/,
    );
  });
});

describe('tree --exec', () => {
  it('gives each command the tree item and the release as its own event; a missing command is reported, not fatal', async () => {
    const dir = await hookDir('tree', KEYS.alice);
    const tree = await subscribed(
      [
        'tree',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.alice,
        '--streams',
        'macro-wire',
        '--count',
        '2',
        '--json',
        '--exec',
        `sh ${join(dir, 'hook.sh')}`,
      ],
      { env: { HOOK_DIR: dir } },
    );
    const missing = await subscribed(
      [
        'tree',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.alice,
        '--streams',
        'macro-wire',
        '--count',
        '2',
        '--exec',
        'no-such-command-for-stream-posts',
      ],
      { env: { HOOK_DIR: dir } },
    );
    const sent = await publishToStream(fixture.serve.url, 'macro-wire', 'exec: a tree item released soon', {
      releaseAt: inMs(3_600_000),
    });
    await waitForLines(tree, 1);
    const response = await fetch(`${fixture.serve.httpUrl}/_admin/clock`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ advanceMs: 3_600_000 }),
    });
    expect(response.status).toBe(200);
    const [result, missed] = await Promise.all([finish(tree), finish(missing)]);
    expect(result.code, result.stderr).toBe(0);
    const items = jsonLines(result.stdout);
    expect(items).toEqual([
      expectedTreeItem(hiddenView(sent.post), true),
      expectedTreeItem({ ...sent.post, hidden: false }, false),
    ]);
    const { runs } = await runsIn(dir);
    expect(runs.map((run) => run.stdin)).toEqual(items);
    expect(runs.map((run) => [run.env['STREAM_POSTS_EVENT'], run.env['STREAM_POSTS_HIDDEN']])).toEqual([
      ['created', 'true'],
      ['released', 'false'],
    ]);
    expect(runs[0]!.env).toMatchObject({
      STREAM_POSTS_FORMAT: 'tree',
      STREAM_POSTS_POST_ID: sent.post.id,
      STREAM_POSTS_STREAM_ID: 'macro-wire',
      STREAM_POSTS_STREAM_NAME: 'Macro Wire',
      STREAM_POSTS_CREATED_AT: sent.post.createdAt,
    });
    expect(missed.code, missed.stderr).toBe(0);
    expect(
      missed.stderr.match(/^stream-posts: warning: --exec: the command exited with code 127 \(post \w+\)/gm),
    ).toHaveLength(2);
  });

  it('--exec without a command is a usage error naming it', async () => {
    const result = await runToEnd(['tree', '--url', fixture.serve.url, '--api-key', KEYS.alice, '--exec']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^stream-posts: option '--exec <command>' argument missing/);
  });
});

describe('--exec and what a server sends', () => {
  /** A server that acknowledges the subscription (no history), then sends one post with these fields. */
  async function serverSending(fields: Record<string, unknown>): Promise<string> {
    // Posts of streams the subscription does not name are not shown: the ack names the post's.
    const streamIds = [String(fields['streamId'] ?? 'wire')];
    const { url } = await scriptedService((ws) => {
      const send = (event: string, data: unknown, requestId?: string) =>
        ws.send(JSON.stringify({ event, data, ...(requestId === undefined ? {} : { requestId }) }));
      send('connected', { message: 'connected', userId: 'u', streams: streamIds });
      ws.on('message', (data) => {
        const command = JSON.parse(String(data));
        send('sub_ack', { command: command.event, streamIds, lastPosts: 0, history: 0 }, command.requestId);
        // `history: 0`: the subscription is live at once.
        send('stream.post.created', wirePost(fields));
      });
    });
    return url;
  }

  it('variables and the failure report carry no control, bidi or NUL character from the server', async () => {
    const hostile = 'A\u001B]0;PWNED\u0007\u001B[2J\u009B2J\u202Eevil\u200B\u0000-end\r\nZ';
    const url = await serverSending({ id: hostile, streamId: hostile, streamName: hostile, customTarget: hostile });
    const out = join(fixture.tmp, 'hostile-variables');
    const result = await runToEnd(
      [
        'listen',
        '--url',
        url,
        '--api-key',
        'k',
        '--count',
        '1',
        '--no-reconnect',
        '-q',
        '--exec',
        `env | grep '^STREAM_POSTS_' > ${out}; exit 5`,
      ],
      {},
    );
    expect(result.code, result.stderr).toBe(0);
    const variables = await readFile(out, 'utf8');
    const shown = 'A ]0;PWNED [2J 2J evil -end Z';
    for (const name of ['POST_ID', 'STREAM_ID', 'STREAM_NAME', 'CUSTOM_TARGET'])
      expect(variables).toContain(`STREAM_POSTS_${name}=${shown}\n`);
    expect(variables).not.toMatch(/[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u200B\u202E]/);
    expect(result.stderr).toBe(
      `stream-posts: warning: --exec: the command exited with code 5 (post ${shown}); going on with the next post\n`,
    );
  });
});
