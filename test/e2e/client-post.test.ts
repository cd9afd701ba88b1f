import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminState, KEYS, restPosts } from '../support/harness.js';
import { jsonLines, postWithCli } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { cliFixture } from '../support/serve.js';

const fixture = cliFixture('post');

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('post', () => {
  it('prints only the new post id; content can come from --file or from stdin with --file -', async () => {
    const file = join(fixture.tmp, 'post.md');
    const fromFile = '# Heading\n\nA *markdown* post\nwith several lines.\n';
    await writeFile(file, fromFile);
    const fromStdin = 'line one from stdin\nline two\n';
    const base = ['post', '--url', fixture.serve.url, '--api-key', KEYS.cryptoLegal, '--stream', 'crypto-legal'];
    const [viaFile, viaStdin] = await Promise.all([
      runInProcess([...base, '--markdown', '--file', file]),
      runInProcess([...base, '--file', '-'], { stdin: fromStdin }),
    ]);
    for (const result of [viaFile, viaStdin]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trimEnd()).toMatch(ULID);
      expect(result.stdout.split('\n')).toHaveLength(2);
    }
    const stored = new Map((await restPosts(fixture.serve, 'crypto-legal')).map((post) => [post.id, post]));
    expect(stored.get(viaFile.stdout.trim())).toMatchObject({ text: fromFile, contentType: 'markdown' });
    expect(stored.get(viaStdin.stdout.trim())).toMatchObject({ text: fromStdin, contentType: 'rawtext' });
  });

  it('accepts the URL with /v1/ws, in the http form, and the key in the query (--auth-query)', async () => {
    const http = fixture.serve.url.replace(/^ws/, 'http');
    const results = await Promise.all([
      postWithCli(`${fixture.serve.url}/v1/ws`, 'macro-wire', 'url with the path'),
      postWithCli(http, 'macro-wire', 'url pasted from the REST docs'),
      postWithCli(`${fixture.serve.url}/v1/ws/`, 'macro-wire', 'trailing slash'),
      postWithCli(fixture.serve.url, 'macro-wire', 'key in the query', ['--auth-query']),
      postWithCli(http, 'macro-wire', 'REST with an http url', ['--via', 'rest']),
    ]);
    const stored = new Map((await restPosts(fixture.serve, 'macro-wire')).map((post) => [post.id, post]));
    for (const { post } of results) expect(stored.get(post.id)).toEqual(post);
  });

  it('--release-at takes ISO 8601 with a zone and relative times; the post is hidden until then', async () => {
    const at = new Date(Date.now() + 3 * 3600_000);
    at.setUTCMilliseconds(0);
    const inOffset = `${new Date(at.getTime() + 2 * 3600_000).toISOString().slice(0, 19)}+02:00`;
    const before = Date.now();
    const [iso, offset, days, seconds] = await Promise.all([
      postWithCli(fixture.serve.url, 'crypto-legal', 'iso release', ['--release-at', at.toISOString()]),
      postWithCli(fixture.serve.url, 'crypto-legal', 'offset release', ['--release-at', inOffset]),
      postWithCli(fixture.serve.url, 'crypto-legal', 'in a day', ['--release-at', '+1d']),
      postWithCli(fixture.serve.url, 'crypto-legal', 'in 30 seconds', ['--release-at', '+30s']),
    ]);
    expect(iso.post).toMatchObject({ hidden: true, releaseAt: at.toISOString(), text: 'iso release' });
    expect(offset.post).toMatchObject({ hidden: true, releaseAt: at.toISOString() });
    const after = Date.now();
    // Counted from the service's now as the CLI knows it (connected.serverTime, taken during the
    // call, against the CLI's own clock, also read during it), to the second above: within the
    // call's span either side, however long the call took, and never before the time asked for.
    const span = after - before;
    const releasedIn = (result: typeof days, ms: number) => {
      const releaseAt = Date.parse(result.post.releaseAt);
      expect(releaseAt).toBeGreaterThanOrEqual(before - span + ms);
      expect(releaseAt).toBeLessThanOrEqual(Math.ceil((after + span + ms) / 1000) * 1000);
      expect(releaseAt % 1000).toBe(0);
    };
    releasedIn(days, 86_400_000);
    releasedIn(seconds, 30_000);
    // A time in the past publishes at once, visible, only when asked to.
    const past = await postWithCli(fixture.serve.url, 'crypto-legal', 'already released', [
      '--release-at',
      '2020-01-01T00:00:00Z',
      '--allow-past',
    ]);
    expect(past.post).toMatchObject({ hidden: false, text: 'already released' });
  });

  it('content of exactly 64 KiB of UTF-8 is published; one byte more is exit 2 and nothing is sent', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const exact = join(fixture.tmp, 'exact.txt');
    const over = join(fixture.tmp, 'over.txt');
    await writeFile(exact, 'é'.repeat(32 * 1024)); // 2 bytes each: 65,536 bytes
    await writeFile(over, `${'é'.repeat(32 * 1024 - 1)}ab!`); // 65,537 bytes
    const base = [
      'post',
      '--json',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.cryptoLegal,
      '--stream',
      'crypto-legal',
      '--file',
    ];
    const [fits, tooBig] = await Promise.all([runInProcess([...base, exact]), runInProcess([...base, over])]);
    expect(fits.code, fits.stderr).toBe(0);
    expect(jsonLines(fits.stdout)[0].post.text).toBe('é'.repeat(32 * 1024));
    expect(tooBig.code).toBe(2);
    expect(tooBig.stdout).toBe('');
    expect((await adminState(fixture.serve)).posts).toBe(before + 1);
  });

  it('an idempotency key deduplicates across the WebSocket and REST forms: same post, duplicate: true', async () => {
    const key = ['--idempotency-key', 'cross-transport-1'];
    const first = await postWithCli(fixture.serve.url, 'macro-wire', 'sent twice, published once', key);
    const [overRest, overWs] = await Promise.all([
      postWithCli(fixture.serve.url, 'macro-wire', 'sent twice, published once', [...key, '--via', 'rest']),
      postWithCli(fixture.serve.url, 'macro-wire', 'sent twice, published once', key),
    ]);
    expect(first.duplicate).toBe(false);
    expect(overRest).toEqual({ post: first.post, duplicate: true });
    expect(overWs).toEqual({ post: first.post, duplicate: true });
    // The human form says so on stderr and still prints the (original) id.
    const human = await runInProcess([
      'post',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.macroWire,
      '--stream',
      'macro-wire',
      ...key,
      'sent twice, published once',
    ]);
    expect(human.code).toBe(0);
    expect(human.stdout).toBe(`${first.post.id}\n`);
    expect(human.stderr).toMatch(/duplicate/);
  });
});
