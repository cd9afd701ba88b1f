import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONNECTED, scriptedService } from '../support/hostile.js';
import { adminState, KEYS, publishToStream, restPosts } from '../support/harness.js';
import { cliCommandLine, finish, shell } from '../support/cli.js';
import { expectCleanError, jsonLines, subscribedInProcess } from '../support/cli-output.js';
import { runInProcess, type InProcessOptions } from '../support/in-process.js';
import { startServe, cliFixture } from '../support/serve.js';

const fixture = cliFixture('post-rules');

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** `post` with a stream's key and the given arguments, run to its end. */
function post(args: string[], key: string = KEYS.macroWire, options: InProcessOptions = {}) {
  return runInProcess(['post', '--url', fixture.serve.url, '--api-key', key, ...args], options);
}

describe('a stream key knows its stream', () => {
  it('post with a stream key needs no --stream: it publishes to the stream the service names', async () => {
    const result = await post(['--json', 'no --stream needed'], KEYS.cryptoLegal);
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout)[0].post).toMatchObject({ streamId: 'crypto-legal', text: 'no --stream needed' });
  });

  it("a profile's default stream is used when --stream is absent (config set NAME --stream ID)", async () => {
    const home = join(fixture.tmp, 'xdg-default-stream');
    const env = { XDG_CONFIG_HOME: home };
    const set = await runInProcess(
      ['config', 'set', 'desk', '--url', fixture.serve.url, '--stream', 'whale-alerts', '--api-key-stdin'],
      { env, stdin: `${KEYS.whaleAlerts}\n` },
    );
    expect(set.code, set.stderr).toBe(0);
    const [dryRun, list] = await Promise.all([
      runInProcess(['post', '--profile', 'desk', '--dry-run', '--custom-target', 'BTC', 'from the profile'], { env }),
      runInProcess(['config', 'list', '--json'], { env }),
    ]);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(JSON.parse(dryRun.stdout).data.streamId).toBe('whale-alerts');
    expect(jsonLines(list.stdout)).toEqual([
      { name: 'desk', url: fixture.serve.url, key: true, stream: 'whale-alerts' },
    ]);
    const badStream = await runInProcess(['config', 'set', 'desk', '--stream', 'not a stream'], { env });
    expect(badStream.code).toBe(2);
    expect(badStream.stderr).toContain('--stream');
  });

  it('a service that does not send streamId: works with --stream, and is a usage error naming --stream without', async () => {
    const published: unknown[] = [];
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', (raw) => {
        const frame = JSON.parse(String(raw));
        published.push(frame.data);
        const post = {
          id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
          streamId: frame.data.streamId,
          streamName: 'Somewhere',
          text: frame.data.content,
          contentType: frame.data.contentType,
          createdAt: '2026-11-21T12:00:00.000Z',
          releaseAt: null,
          hidden: false,
          customTarget: null,
        };
        ws.send(JSON.stringify({ event: 'ack', requestId: frame.requestId, data: { post, duplicate: false } }));
      });
    });
    const base = ['post', '--url', service.url, '--api-key', 'some-key'];
    const [withStream, without] = await Promise.all([
      runInProcess([...base, '--stream', 's', 'to s']),
      runInProcess([...base, 'to nowhere']),
    ]);
    expect(withStream.code, withStream.stderr).toBe(0);
    expect(withStream.stdout).toBe('01JWEX3G5B1P2FMXKPJAHEMTTH\n');
    expect(without.code).toBe(2);
    expect(without.stderr).toContain(
      'missing --stream ID: the service did not say which stream this key publishes to; give --stream ID, or store a default with: stream-posts config set NAME --stream ID',
    );
    expect(published).toEqual([expect.objectContaining({ streamId: 's', content: 'to s' })]);
  });
});

describe('release times', () => {
  it('a --release-at in the past is exit 2 naming --release-at, unless --allow-past; nothing is sent', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const past = await post(['--release-at', '2020-01-01T00:00:00Z', 'too late']);
    expect(past.code).toBe(2);
    expect(past.stderr).toContain('--release-at 2020-01-01 00:00 UTC: release time is in the past');
    expect(past.stderr).toContain('--allow-past');
    expect((await adminState(fixture.serve)).posts).toBe(before);
    const allowed = await post(['--json', '--release-at', '2020-01-01T00:00:00Z', '--allow-past', 'late on purpose']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(jsonLines(allowed.stdout)[0].post).toMatchObject({ hidden: false, text: 'late on purpose' });
  });

  it('an unreadable release time names --release-at, not the protocol field', async () => {
    const results = await Promise.all([
      post(['--release-at', 'tomorrow', 'x']),
      post(['--release-at', '2026-13-01T00:00:00Z', 'x']),
      post(['--dry-run', '--stream', 'macro-wire', '--release-at', '2026-12-01T09:00:00', 'x']),
    ]);
    for (const result of results) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('--release-at');
      expect(result.stderr).not.toContain('releaseAt');
      expect(result.stderr).toContain('+10m');
      expectCleanError(result.stderr);
    }
  });

  it.each([
    ['a day, the stream named by the service', 86_400_000, []],
    ['two hours, the stream given with --stream', 2 * 3_600_000, ['--stream', 'macro-wire']],
  ])(
    "relative times count from the service's clock: after /_admin/clock moved it %s, +10m is ten minutes on it",
    async (_what, advanceMs, flags) => {
      const own = await startServe();
      const moved = await fetch(`${own.httpUrl}/_admin/clock`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ advanceMs }),
      });
      expect(moved.status).toBe(200);
      const result = await runInProcess([
        'post',
        '--url',
        own.url,
        '--api-key',
        KEYS.macroWire,
        ...flags,
        '--json',
        '--release-at',
        '+10m',
        'ten minutes on the service clock',
      ]);
      expect(result.code, result.stderr).toBe(0);
      const { post: sent } = jsonLines(result.stdout)[0];
      expect(sent.hidden).toBe(true);
      const ahead = Date.parse(sent.releaseAt) - Date.parse(sent.createdAt);
      expect(ahead).toBeGreaterThan(9 * 60_000);
      // Rounded up to the second: at most a second over.
      expect(ahead).toBeLessThanOrEqual(10 * 60_000 + 1_000);
      expect(Date.parse(sent.releaseAt)).toBeGreaterThan(Date.now() + advanceMs);
    },
  );

  it('-v says when a relative time counts from this machine because the service gave no clock (over REST)', async () => {
    const result = await runInProcess([
      'post',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.macroWire,
      '--stream',
      'macro-wire',
      '--via',
      'rest',
      '-v',
      '--release-at',
      '+1h',
      'from this machine',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /over REST the service does not say its time: --release-at \+1h counts from this machine's clock/,
    );
  });
});

describe('content', () => {
  it('whitespace-only content is exit 2, like empty content; nothing is sent', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const [spaces, empty] = await Promise.all([post([' \n\t ']), post([''])]);
    expect(spaces.code).toBe(2);
    expect(spaces.stderr).toContain('the content is only whitespace: nothing to publish');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('the content is empty');
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });

  it('- as the content reads standard input; so does a pipe with no content argument', async () => {
    const dash = await post(['-'], KEYS.macroWire, { stdin: 'from a dash\nline two\n' });
    const piped = await finish(
      shell(
        `printf 'piped in\\n' | ${cliCommandLine(['post', '--url', fixture.serve.url, '--api-key', KEYS.macroWire])}`,
      ),
    );
    for (const result of [dash, piped]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim()).toMatch(ULID);
    }
    const stored = new Map((await restPosts(fixture.serve, 'macro-wire')).map((each) => [each.id, each.text]));
    expect(stored.get(dash.stdout.trim())).toBe('from a dash\nline two\n');
    expect(stored.get(piped.stdout.trim())).toBe('piped in\n');
  });

  it('content starting with - gets the hint to put -- before it, which works; a misspelt flag gets its suggestion only', async () => {
    const [dashed, separated, misspelt] = await Promise.all([
      post(['-5% at the open']),
      post(['--json', '--', '-5% at the open']),
      post(['--markdwon', 'x']),
    ]);
    expect(dashed.code).toBe(2);
    expect(dashed.stderr).toContain("unknown option '-5% at the open'");
    expect(dashed.stderr).toContain('use -- before content starting with -');
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toContain('--markdown');
    expect(misspelt.stderr).not.toContain('use -- before content');
    expect(separated.code, separated.stderr).toBe(0);
    expect(jsonLines(separated.stdout)[0].post.text).toBe('-5% at the open');
  });

  it('unquoted words of content are exit 2 with a hint to quote them; nothing is sent', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const result = await post(['Fed', 'holds', 'rates']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('the content is one argument, but 3 were given: quote it');
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });
});

describe('keys and flags', () => {
  it('"the service refused the key" says where the key came from, for post and listen', async () => {
    const home = join(fixture.tmp, 'xdg-refused');
    const keyFile = join(fixture.tmp, 'wrong.key');
    await writeFile(keyFile, 'sp_wrong_from_file\n');
    const set = await runInProcess(
      ['config', 'set', 'bad', '--url', fixture.serve.url, '--api-key', 'sp_wrong_in_profile'],
      {
        env: { XDG_CONFIG_HOME: home },
      },
    );
    expect(set.code, set.stderr).toBe(0);
    const url = ['--url', fixture.serve.url];
    const results = await Promise.all([
      runInProcess(['post', ...url, '--api-key', 'sp_wrong_flag', '--stream', 'macro-wire', 'x']),
      runInProcess(['post', ...url, '--api-key-file', keyFile, '--stream', 'macro-wire', 'x']),
      runInProcess(['listen', ...url], { env: { STREAM_POSTS_API_KEY: 'sp_wrong_env' } }),
      // --profile is a flag: its key is the one used (and named), not the environment's.
      runInProcess(['post', '--profile', 'bad', '--stream', 'macro-wire', 'x'], {
        env: { XDG_CONFIG_HOME: home, STREAM_POSTS_API_KEY: KEYS.macroWire },
      }),
      runInProcess(['tree', ...url, '--api-key-stdin'], { stdin: 'sp_wrong_stdin\n' }),
      runInProcess(['post', ...url, '--via', 'rest', '--api-key', 'sp_wrong_flag', '--stream', 'macro-wire', 'x']),
    ]);
    const sources = [
      '--api-key',
      `--api-key-file ${keyFile}`,
      'STREAM_POSTS_API_KEY',
      `profile "bad" in ${join(home, 'stream-posts', 'config.json')}`,
      'standard input (--api-key-stdin)',
      '--api-key',
    ];
    results.forEach((result, index) => {
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toContain(`the service refused the key from ${sources[index]}`);
      expectCleanError(result.stderr, ['sp_wrong_flag', 'sp_wrong_from_file', 'sp_wrong_env', 'sp_wrong_in_profile']);
    });
  });

  it('--quiet silences the duplicate warning; the id is still printed', async () => {
    const key = ['--idempotency-key', `quiet-duplicate-${process.pid}`];
    const first = await post([...key, 'once']);
    const [loud, quiet] = await Promise.all([post([...key, 'once']), post([...key, '--quiet', 'once'])]);
    for (const result of [loud, quiet]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(first.stdout);
    }
    expect(loud.stderr).toContain('duplicate');
    expect(quiet.stderr).toBe('');
  });
});

describe('durations', () => {
  it('a number without a unit is seconds: --idle-timeout 30 waits for a post published after it started', async () => {
    const listener = await subscribedInProcess([
      'listen',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.newsdesk,
      '--streams',
      'macro-wire',
      '--idle-timeout',
      '30',
      '--count',
      '1',
      '--json',
      '--timeout',
      '30',
    ]);
    const { post: sent } = await publishToStream(fixture.serve.url, 'macro-wire', 'within thirty seconds');
    const result = await finish(listener);
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout)).toEqual([{ event: 'stream.post.created', data: sent }]);
  });

  it('a bad duration is exit 2 naming the flag and the accepted forms', async () => {
    const results = await Promise.all([
      runInProcess(['listen', '--idle-timeout', 'soon']),
      runInProcess(['post', '--timeout', '5 parsecs', 'x']),
      runInProcess(['serve', '--keep-alive', 'often']),
    ]);
    for (const [index, flag] of ['--idle-timeout', '--timeout', '--keep-alive'].entries()) {
      expect(results[index]!.code).toBe(2);
      expect(results[index]!.stderr).toContain(flag);
      expect(results[index]!.stderr).toContain('a number of seconds (5, 1.5) or a number with a unit: 500ms, 30s');
    }
  });
});
