import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/client/backoff.js';
import { runBatch, type BatchResult } from '../../src/cli/batch.js';
import { configPath, endpointsFromFlag, readConfig, resolveSettings, writeConfig } from '../../src/cli/settings.js';
import { parseSeedText } from '../../src/server/service/seed.js';
import { DEFAULT_URL, resolveEndpoint } from '../../src/client/endpoint.js';
import { ClientError } from '../../src/client/errors.js';
import { EXIT, ExitError } from '../../src/cli/exit.js';
import { resolveReleaseAt } from '../../src/cli/release-at.js';
import { buildPublishArgs } from '../../src/cli/validate-post.js';
import { withIdempotencyKey } from '../../src/client/idempotency.js';
import type { PublishData, PublishOutcome } from '../../src/client/publisher.js';
import { SeenPosts } from '../../src/client/seen.js';
import { samplePost } from '../support/fixtures.js';

describe('resolveEndpoint', () => {
  it.each([
    ['ws://localhost:8787', 'ws://localhost:8787/v1/ws', 'http://localhost:8787'],
    ['ws://localhost:8787/', 'ws://localhost:8787/v1/ws', 'http://localhost:8787'],
    ['ws://localhost:8787/v1/ws', 'ws://localhost:8787/v1/ws', 'http://localhost:8787'],
    ['wss://api.example.com/v1/ws/', 'wss://api.example.com/v1/ws', 'https://api.example.com'],
    ['wss://example.com/streams', 'wss://example.com/streams/v1/ws', 'https://example.com/streams'],
    ['https://example.com', 'wss://example.com/v1/ws', 'https://example.com'],
    ['http://127.0.0.1:9', 'ws://127.0.0.1:9/v1/ws', 'http://127.0.0.1:9'],
    [' ws://[::1]:8787 ', 'ws://[::1]:8787/v1/ws', 'http://[::1]:8787'],
  ])('%s', (raw, wsUrl, httpBase) => {
    expect(resolveEndpoint(raw)).toEqual({ wsUrl, httpBase });
  });

  it.each([
    'not a url',
    'ftp://example.com',
    'localhost:8787',
    'ws://user:pw@example.com',
    'ws://example.com/v1/ws?apiKey=secret123',
    'ws://localhost:8787/graphql?format=tree&apiKey=secret123',
    'ws://localhost:8787/graphql?format=tree&token=secret123',
    'ws://localhost:8787/graphql?format=json',
  ])('rejects %s as usage, without echoing a key', (raw) => {
    let error: unknown;
    try {
      resolveEndpoint(raw);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).kind).toBe('usage');
    expect((error as ClientError).message).not.toContain('secret123');
  });
});

describe('resolveSettings', () => {
  async function withConfig(
    profiles: Record<string, { url?: string | string[]; apiKey?: string }>,
  ): Promise<NodeJS.ProcessEnv> {
    const home = await mkdtemp(join(tmpdir(), 'sp-config-'));
    const env = { XDG_CONFIG_HOME: home };
    await writeConfig(configPath(env), { profiles });
    return env;
  }

  it('defaults to the local serve address and no key', async () => {
    const env = await withConfig({});
    expect(await resolveSettings({}, env)).toEqual({
      endpoint: resolveEndpoint(DEFAULT_URL),
      endpoints: [resolveEndpoint(DEFAULT_URL)],
      apiKey: undefined,
      profile: undefined,
      // Where `terminal` keeps its session.
      configPath: expect.stringMatching(/\/stream-posts\/config\.json$/),
    });
  });

  it("takes several addresses from repeated flags, a comma-separated STREAM_POSTS_URL or a profile's array, in order", async () => {
    const urls = async (settings: Promise<{ endpoints: { wsUrl: string }[] }>) =>
      (await settings).endpoints.map((endpoint) => endpoint.wsUrl);
    const env = await withConfig({ work: { url: ['ws://p1.example', 'ws://p2.example'] } });
    expect(await urls(resolveSettings({ profile: 'work' }, env))).toEqual([
      'ws://p1.example/v1/ws',
      'ws://p2.example/v1/ws',
    ]);
    // A profile named in the environment comes after STREAM_POSTS_URL; one named by --profile, before it.
    expect(
      await urls(
        resolveSettings(
          {},
          { ...env, STREAM_POSTS_PROFILE: 'work', STREAM_POSTS_URL: 'ws://e1.example, ws://e2.example' },
        ),
      ),
    ).toEqual(['ws://e1.example/v1/ws', 'ws://e2.example/v1/ws']);
    expect(
      await urls(
        resolveSettings({ profile: 'work' }, { ...env, STREAM_POSTS_URL: 'ws://e1.example, ws://e2.example' }),
      ),
    ).toEqual(['ws://p1.example/v1/ws', 'ws://p2.example/v1/ws']);
    expect(await urls(resolveSettings({ url: ['ws://f1.example', 'ws://f2.example'] }, env))).toEqual([
      'ws://f1.example/v1/ws',
      'ws://f2.example/v1/ws',
    ]);
    // A tree feed address keeps the commas of its query.
    const feeds = await urls(
      resolveSettings(
        {},
        {
          ...env,
          STREAM_POSTS_URL:
            'wss://a.example/graphql?format=tree&streamIds=x,y,wss://b.example/graphql?format=tree&streamIds=x,y',
        },
      ),
    );
    expect(feeds).toEqual([
      'wss://a.example/graphql?format=tree&streamIds=x,y',
      'wss://b.example/graphql?format=tree&streamIds=x,y',
    ]);
  });

  it('takes flags (--profile among them) over environment over a profile the environment names', async () => {
    const env = await withConfig({ work: { url: 'wss://profile.example', apiKey: 'profile-key' } });
    const fromProfile = await resolveSettings({ profile: 'work' }, env);
    expect([fromProfile.endpoint.wsUrl, fromProfile.apiKey, fromProfile.profile]).toEqual([
      'wss://profile.example/v1/ws',
      'profile-key',
      'work',
    ]);
    const overEnv = await resolveSettings(
      { profile: 'work' },
      { ...env, STREAM_POSTS_URL: 'ws://env.example', STREAM_POSTS_API_KEY: 'env-key' },
    );
    expect([overEnv.endpoint.wsUrl, overEnv.apiKey]).toEqual(['wss://profile.example/v1/ws', 'profile-key']);
    const fromEnv = await resolveSettings(
      {},
      { ...env, STREAM_POSTS_PROFILE: 'work', STREAM_POSTS_URL: 'ws://env.example', STREAM_POSTS_API_KEY: 'env-key' },
    );
    expect([fromEnv.endpoint.wsUrl, fromEnv.apiKey]).toEqual(['ws://env.example/v1/ws', 'env-key']);
    const fromFlags = await resolveSettings(
      { profile: 'work', url: ['ws://flag.example'], apiKey: 'flag-key' },
      { ...env, STREAM_POSTS_URL: 'ws://env.example', STREAM_POSTS_API_KEY: 'env-key' },
    );
    expect([fromFlags.endpoint.wsUrl, fromFlags.apiKey]).toEqual(['ws://flag.example/v1/ws', 'flag-key']);
  });

  it('applies a profile named default, or the one STREAM_POSTS_PROFILE names', async () => {
    const env = await withConfig({ default: { url: 'ws://default.example' }, other: { url: 'ws://other.example' } });
    expect((await resolveSettings({}, env)).endpoint.wsUrl).toBe('ws://default.example/v1/ws');
    expect((await resolveSettings({}, { ...env, STREAM_POSTS_PROFILE: 'other' })).endpoint.wsUrl).toBe(
      'ws://other.example/v1/ws',
    );
  });

  it('reads --api-key-file, trimmed', async () => {
    const env = await withConfig({});
    const file = join(env['XDG_CONFIG_HOME']!, 'key');
    await writeFile(file, 'file-key\n');
    expect((await resolveSettings({ apiKeyFile: file }, env)).apiKey).toBe('file-key');
  });

  it.each([
    [{ profile: 'missing' }, /no profile named "missing"/],
    [{ apiKey: 'a', apiKeyFile: '/x' }, /give the key once: --api-key, --api-key-file or --api-key-stdin/],
    [{ apiKeyFile: '/nonexistent/key' }, /no such file/],
    [{ url: ['nope'] }, /--url must be/],
    [
      { url: ['ws://a.example', 'ws://b.example/graphql?format=tree'] },
      /--url: give every address as a tree feed address/,
    ],
  ])('usage error for %o', async (flags, message) => {
    const env = await withConfig({});
    await expect(resolveSettings(flags, env)).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message: expect.stringMatching(message),
    });
  });

  it('names the bad field of a malformed config file', async () => {
    const home = await mkdtemp(join(tmpdir(), 'sp-config-'));
    const path = configPath({ XDG_CONFIG_HOME: home });
    await writeConfig(path, { profiles: {} });
    await writeFile(path, JSON.stringify({ profiles: { work: { url: 42 } } }));
    await expect(readConfig(path)).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message: expect.stringContaining('profiles.work.url'),
    });
    await writeFile(path, '{not json');
    await expect(readConfig(path)).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message: expect.stringContaining('not valid JSON'),
    });
  });
});

describe('backoffDelay', () => {
  it('doubles from 250 ms up to 30 s, with half of it random', () => {
    expect(backoffDelay(0, undefined, () => 0)).toBe(125);
    expect(backoffDelay(0, undefined, () => 1)).toBe(250);
    expect(backoffDelay(3, undefined, () => 1)).toBe(2000);
    expect(backoffDelay(20, undefined, () => 0)).toBe(15_000);
    expect(backoffDelay(20, undefined, () => 1)).toBe(30_000);
  });
});

describe('SeenPosts', () => {
  it('forgets the oldest ids beyond its capacity', () => {
    const seen = new SeenPosts(3);
    for (const id of ['a', 'b', 'c', 'd']) seen.mark(id, 'visible');
    expect([seen.get('a'), seen.get('b'), seen.get('d'), seen.size]).toEqual([undefined, 'visible', 'visible', 3]);
    seen.mark('b', 'visible');
    seen.mark('e', 'hidden');
    expect([seen.get('c'), seen.get('b'), seen.get('e')]).toEqual([undefined, 'visible', 'hidden']);
  });

  it('forgets the oldest ids beyond its bytes too, however large its capacity grew', () => {
    const seen = new SeenPosts(10, 1_000);
    seen.ensureCapacity(1_000_000);
    for (let i = 0; i < 100; i++) seen.mark(`${i}-${'x'.repeat(100)}`, 'visible');
    expect(seen.bytes).toBeLessThanOrEqual(1_000);
    expect(seen.size).toBe(3);
    expect(seen.get(`99-${'x'.repeat(100)}`)).toBe('visible');
    // Marking an id again counts it once.
    seen.mark(`99-${'x'.repeat(100)}`, 'visible');
    expect([seen.size, seen.bytes]).toEqual([3, 3 * (64 + 2 * 103)]);
  });
});

describe('publish arguments', () => {
  const now = Date.parse('2026-11-21T12:00:00.000Z');

  it.each([
    ['+10m', '2026-11-21T12:10:00.000Z'],
    ['+2h', '2026-11-21T14:00:00.000Z'],
    ['+1d', '2026-11-22T12:00:00.000Z'],
    ['+30s', '2026-11-21T12:00:30.000Z'],
    ['2026-12-01T09:00:00+01:00', '2026-12-01T09:00:00+01:00'],
  ])('release time %s', (text, expected) => {
    expect(resolveReleaseAt(text, now)).toBe(expected);
  });

  it('fills in defaults; a distinct idempotency key per post is added for sending, never over one given', () => {
    const validated = buildPublishArgs({ content: 'hi' }, { streamId: 's1', contentType: 'markdown' }, now);
    expect(validated).toEqual({
      streamId: 's1',
      content: 'hi',
      contentType: 'markdown',
      releaseAt: null,
      customTarget: null,
      idempotencyKey: null,
    });
    const first = withIdempotencyKey(validated);
    const second = withIdempotencyKey(validated);
    expect(first.idempotencyKey).toMatch(/^sp-[0-9a-f-]{36}$/);
    expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
    const mine = buildPublishArgs(
      { content: 'hi', idempotencyKey: 'mine' },
      { streamId: 's1', contentType: 'rawtext' },
    );
    expect(withIdempotencyKey(mine).idempotencyKey).toBe('mine');
  });

  it.each([
    [{ content: '' }, /content must not be empty/],
    [{ content: 'x', releaseAt: 'tomorrow' }, /releaseAt/],
    [{ content: 'x', contentType: 'html' }, /contentType/],
    [{ content: 'x', streamId: 'bad id!' }, /streamId/],
  ])('rejects %o naming the field', (input, message) => {
    expect(() => buildPublishArgs(input, { streamId: 's1', contentType: 'rawtext' }, now)).toThrow(message);
  });
});

describe('runBatch', () => {
  const linesOf = (lines: string[]) => Readable.from(lines.map((line) => `${line}\n`));

  it('reports every line in input order although replies come back out of order, never exceeding the window', async () => {
    let active = 0;
    let peak = 0;
    const send = async (args: PublishData): Promise<PublishOutcome> => {
      active += 1;
      peak = Math.max(peak, active);
      // Later lines are acknowledged sooner: replies arrive reversed.
      await new Promise((resolve) => setTimeout(resolve, 40 - Number(args.content) * 3));
      active -= 1;
      if (args.content === '5') return { ok: false, code: 'forbidden', message: 'no' };
      return { ok: true, post: samplePost({ id: `p${args.content}` }), duplicate: false, attempts: 1 };
    };
    const results: BatchResult[] = [];
    const input = ['1', '2', '', 'not json', '[1]', '3', '4', '5', '6'].map((content) =>
      content === '' || content === 'not json' || content.startsWith('[') ? content : JSON.stringify({ content }),
    );
    const summary = await runBatch({
      input: linesOf(input),
      defaults: { streamId: 's1', contentType: 'rawtext' },
      window: 3,
      send,
      onResult: (result) => results.push(result),
    });
    expect(
      results.map((result) =>
        'post' in result ? `${result.line}:${result.post.id}` : `${result.line}:${result.error.code}`,
      ),
    ).toEqual(['1:p1', '2:p2', '4:bad-json', '5:invalid-argument', '6:p3', '7:p4', '8:forbidden', '9:p6']);
    expect(summary).toEqual({ published: 5, failed: 3, timedOut: 0 });
    expect(peak).toBe(3);
  });

  it('stops at a lost connection, keeping the results already reported, and rejects with its error', async () => {
    const results: BatchResult[] = [];
    const lost = new ClientError('unreachable', 'gone');
    let calls = 0;
    const send = async (): Promise<PublishOutcome> => {
      calls += 1;
      if (calls > 2) throw lost;
      return { ok: true, post: samplePost({ id: `p${calls}` }), duplicate: false, attempts: 1 };
    };
    const lines = Array.from({ length: 10 }, (_, index) => JSON.stringify({ content: String(index) }));
    await expect(
      runBatch({
        input: linesOf(lines),
        defaults: { streamId: 's1', contentType: 'rawtext' },
        window: 1,
        send,
        onResult: (result) => results.push(result),
      }),
    ).rejects.toBe(lost);
    expect(results.map((result) => result.line)).toEqual([1, 2]);
    expect(calls).toBe(3);
  });

  it('reports a resent post acknowledged as duplicate as not a duplicate: it was this run that published it', async () => {
    const results: BatchResult[] = [];
    const send = async (): Promise<PublishOutcome> => ({ ok: true, post: samplePost(), duplicate: true, attempts: 2 });
    await runBatch({
      input: linesOf(['{"content":"x"}']),
      defaults: { streamId: 's1', contentType: 'rawtext' },
      window: 1,
      send,
      onResult: (result) => results.push(result),
    });
    expect(results).toEqual([{ line: 1, post: samplePost(), duplicate: false }]);
  });
});

describe('wrapped errors keep their cause', () => {
  const thrown = (run: () => unknown): unknown => {
    try {
      run();
    } catch (caught) {
      return caught;
    }
    throw new Error('nothing was thrown');
  };

  it('a --url the endpoint refuses: the flag in the CLI wording, the library error as cause', () => {
    const error = thrown(() => endpointsFromFlag('ws://example.com/v1/ws?apiKey=secret123'));
    expect(error).toBeInstanceOf(ExitError);
    expect(error).toMatchObject({ exitCode: EXIT.usage });
    expect((error as Error).message).toBe(
      '--url must not have a query or fragment; give the key with --api-key-file or STREAM_POSTS_API_KEY',
    );
    // The library's bad-option error, worded for the flags when it was made.
    expect((error as Error).cause).toMatchObject({ code: 'bad-option', option: 'url' });
  });

  it('a seed that is not JSON keeps the parser error', () => {
    expect((thrown(() => parseSeedText('{')) as Error).cause).toBeInstanceOf(SyntaxError);
  });
});
