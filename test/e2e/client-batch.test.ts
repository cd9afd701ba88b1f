import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from '../../src/api/client.js';
import { adminState, KEYS, restPosts } from '../support/harness.js';
import { expectCleanError, jsonLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { cliFixture } from '../support/serve.js';

const fixture = cliFixture('batch');

const ndjson = (...lines: unknown[]) =>
  `${lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n')}\n`;
const batch = (flags: string[], stdin?: string) =>
  runInProcess(
    [
      'post',
      '--batch',
      '--url',
      fixture.serve.url,
      '--api-key',
      KEYS.cryptoLegal,
      '--stream',
      'crypto-legal',
      ...flags,
    ],
    stdin === undefined ? {} : { stdin },
  );

describe('post --batch', () => {
  it('reports every line in input order, bad lines as errors, publishes the rest, exits 1', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const input = ndjson(
      { content: 'batch one' },
      '{"content": "no closing brace"',
      { contentType: 'markdown' },
      { content: '**batch four**', contentType: 'markdown' },
      { content: 'batch five', streamId: 'macro-wire' },
      { content: 'batch six', releaseAt: '+1h' },
    );
    const { code, stdout, stderr } = await batch([], input);
    expect(code, stderr).toBe(1);
    const results = jsonLines(stdout);
    expect(results.map((result) => result.line)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(results[0]).toMatchObject({
      line: 1,
      duplicate: false,
      post: { streamId: 'crypto-legal', text: 'batch one', contentType: 'rawtext', hidden: false },
    });
    expect(results[1]).toEqual({ line: 2, error: { code: 'bad-json', message: expect.any(String) } });
    expect(results[2]).toEqual({
      line: 3,
      error: { code: 'invalid-argument', message: expect.stringContaining('content') },
    });
    expect(results[3]).toMatchObject({
      line: 4,
      duplicate: false,
      post: { text: '**batch four**', contentType: 'markdown' },
    });
    // The service's own refusal of one line is that line's result too.
    expect(results[4]).toEqual({ line: 5, error: { code: 'forbidden', message: expect.any(String) } });
    expect(results[5]).toMatchObject({ line: 6, duplicate: false, post: { text: 'batch six', hidden: true } });
    expect(Date.parse(results[5].post.releaseAt) - Date.parse(results[5].post.createdAt)).toBeGreaterThan(59 * 60_000);
    expectCleanError(stderr);

    expect((await adminState(fixture.serve)).posts - before).toBe(3);
    const stored = new Map((await restPosts(fixture.serve, 'crypto-legal')).map((post) => [post.id, post]));
    for (const index of [0, 3]) expect(stored.get(results[index].post.id)).toEqual(results[index].post);
    expect(stored.get(results[5].post.id)).toMatchObject({ id: results[5].post.id, hidden: true });
  });

  it('publishes an all-good batch with a small window and exits 0, results in order', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const count = 40;
    const lines = Array.from({ length: count }, (_, i) => ({
      content: `good line ${i + 1}`,
      ...(i % 3 === 0 ? { contentType: 'markdown' } : {}),
    }));
    const { code, stdout, stderr } = await batch(['--window', '4'], ndjson(...lines));
    expect(code, stderr).toBe(0);
    const results = jsonLines(stdout);
    expect(results).toHaveLength(count);
    results.forEach((result, i) => {
      expect(result).toMatchObject({
        line: i + 1,
        duplicate: false,
        post: {
          streamId: 'crypto-legal',
          text: `good line ${i + 1}`,
          contentType: i % 3 === 0 ? 'markdown' : 'rawtext',
        },
      });
    });
    expect(new Set(results.map((result) => result.post.id)).size).toBe(count);
    expect((await adminState(fixture.serve)).posts - before).toBe(count);
    const stored = new Map((await restPosts(fixture.serve, 'crypto-legal')).map((post) => [post.id, post]));
    for (const result of results) expect(stored.get(result.post.id)).toEqual(result.post);
  });

  it('goes past the service’s rate limit (200/s, burst 400) at the pace it states: 600 lines, each published once', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const count = 600;
    const lines = Array.from({ length: count }, (_, i) => ({ content: `rate ${i + 1}` }));
    const { code, stdout, stderr } = await batch(['--window', '64'], ndjson(...lines));
    expect(code, stderr).toBe(0);
    const results = jsonLines(stdout);
    expect(results.map((result) => [result.line, result.post?.text, result.duplicate])).toEqual(
      lines.map((line, i) => [i + 1, line.content, false]),
    );
    expect((await adminState(fixture.serve)).posts - before).toBe(count);
  });

  it('a 1,000-line batch at the default rate limit reaches a subscriber in file order', async () => {
    const count = 1_000;
    const tag = `order-${Date.now()}`;
    const reader = await connect({ url: fixture.serve.url, apiKey: KEYS.newsdesk });
    const subscription = reader.subscribe({ streamIds: ['crypto-legal'] });
    await subscription.ready;
    const seen: string[] = [];
    const delivered = (async () => {
      for await (const event of subscription) {
        if (event.format !== 'post' || !event.post.text?.startsWith(tag)) continue;
        seen.push(event.post.text);
        if (seen.length === count) return;
      }
    })();
    const lines = Array.from({ length: count }, (_, i) => ({ content: `${tag} ${i + 1}` }));
    const { code, stderr } = await batch([], ndjson(...lines));
    expect(code, stderr).toBe(0);
    // Paced by the limit, the 680 posts past the first part of the burst take at least 3.4 s:
    // past 2 s, stderr said how the service limits the rate.
    expect(stderr).toMatch(/^stream-posts: warning: the service limits the rate to 200 commands\/s \(bursts of 400\)/m);
    await delivered;
    await reader.close();
    expect(seen).toEqual(lines.map((line) => line.content));
  });

  it('reads --file, publishes over REST with --via rest, and reports a repeated idempotency key as a duplicate', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const file = join(fixture.tmp, 'posts.ndjson');
    await writeFile(
      file,
      ndjson(
        { content: 'from a file, once', idempotencyKey: 'batch-idem' },
        { content: 'from a file, once', idempotencyKey: 'batch-idem' },
        { content: 'file two' },
      ),
    );
    const { code, stdout, stderr } = await batch(['--file', file, '--via', 'rest', '--window', '1']);
    expect(code, stderr).toBe(0);
    const results = jsonLines(stdout);
    expect(results).toHaveLength(3);
    expect(results[0]).toMatchObject({ line: 1, duplicate: false, post: { text: 'from a file, once' } });
    expect(results[1]).toEqual({ line: 2, duplicate: true, post: results[0].post });
    expect(results[2]).toMatchObject({ line: 3, duplicate: false, post: { text: 'file two' } });
    expect((await adminState(fixture.serve)).posts - before).toBe(2);
  });

  it("a line cannot redirect the key or set a wait: fields that are not the command's are ignored, as the service ignores them", async () => {
    for (const via of ['rest', 'ws']) {
      const line = {
        content: `stays here (${via})`,
        url: 'http://127.0.0.1:9/',
        apiKey: 'sp_other_key_from_a_line',
        timeoutMs: 1,
      };
      const { code, stdout, stderr } = await batch(['--via', via], ndjson(line));
      expect(code, stderr).toBe(0);
      expect(jsonLines(stdout)).toEqual([
        {
          line: 1,
          duplicate: false,
          post: expect.objectContaining({ streamId: 'crypto-legal', text: `stays here (${via})` }),
        },
      ]);
    }
  });

  it('--dry-run prints each command, sends nothing, exits 2 when a line is invalid and 0 when none is', async () => {
    const before = (await adminState(fixture.serve)).posts;
    // No key and nothing listening: a dry run must not need either.
    const dry = (stdin: string) =>
      runInProcess(['post', '--batch', '--dry-run', '--url', 'ws://127.0.0.1:1', '--stream', 'crypto-legal'], {
        stdin,
      });
    const [bad, good] = await Promise.all([
      dry(
        ndjson(
          { content: 'dry one', idempotencyKey: 'k1' },
          'not json',
          { content: '' },
          { content: 'dry four', streamId: 'macro-wire', contentType: 'markdown', idempotencyKey: 'k4' },
        ),
      ),
      dry(ndjson({ content: 'dry ok', idempotencyKey: 'k5', releaseAt: '2030-01-01T00:00:00Z' })),
    ]);
    expect(bad.code, bad.stderr).toBe(2);
    expect(jsonLines(bad.stdout)).toEqual([
      {
        line: 1,
        command: {
          event: 'add-stream-post',
          data: { streamId: 'crypto-legal', content: 'dry one', contentType: 'rawtext', idempotencyKey: 'k1' },
        },
      },
      { line: 2, error: { code: 'bad-json', message: expect.any(String) } },
      { line: 3, error: { code: 'invalid-argument', message: expect.any(String) } },
      {
        line: 4,
        command: {
          event: 'add-stream-post',
          data: { streamId: 'macro-wire', content: 'dry four', contentType: 'markdown', idempotencyKey: 'k4' },
        },
      },
    ]);
    expect(good.code, good.stderr).toBe(0);
    expect(jsonLines(good.stdout)).toEqual([
      {
        line: 1,
        command: {
          event: 'add-stream-post',
          data: {
            streamId: 'crypto-legal',
            content: 'dry ok',
            contentType: 'rawtext',
            idempotencyKey: 'k5',
            releaseAt: '2030-01-01T00:00:00Z',
          },
        },
      },
    ]);
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });
});
