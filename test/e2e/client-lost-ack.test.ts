import { describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/cli.js';
import { expectCleanError, jsonLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { KEYS, restPosts, STREAM_KEYS } from '../support/harness.js';
import { startServe, type Serve } from '../support/serve.js';

ensureBuilt();

const KEY = STREAM_KEYS['macro-wire']!;

/** `stream-posts faults add drop-acks [--count N]` against `serve`. */
async function dropAcks(serve: Serve, count?: number): Promise<void> {
  const added = await runInProcess([
    'faults',
    'add',
    'drop-acks',
    ...(count === undefined ? [] : ['--count', String(count)]),
    '--url',
    serve.url,
  ]);
  expect(added.code, added.stderr).toBe(0);
}

function post(serve: Serve, flags: string[], content?: string, stdin?: string) {
  const args = ['post', '--url', serve.url, '--api-key', KEY, '--stream', 'macro-wire', ...flags];
  return runInProcess(content === undefined ? args : [...args, content], stdin === undefined ? {} : { stdin });
}

async function copiesOf(serve: Serve, text: string): Promise<string[]> {
  const posts = await restPosts(serve, 'macro-wire', KEYS.alice);
  return posts.filter((each: { text: string }) => each.text === text).map((each: { id: string }) => each.id);
}

describe('post when acks are lost (drop-acks)', () => {
  for (const count of [1, 3]) {
    it(`--count ${count}: post resends with its idempotency key; exit 0, one copy`, async () => {
      const serve = await startServe();
      await dropAcks(serve, count);
      const text = `lost ${count}`;
      const result = await post(serve, ['--timeout', '8s', '--json'], text);
      expect(result.code, result.stderr).toBe(0);
      const [printed] = jsonLines(result.stdout);
      expect([printed.post.text, printed.duplicate]).toEqual([text, false]);
      expect(await copiesOf(serve, text)).toEqual([printed.post.id]);
      const faults = await runInProcess(['faults', 'list', '--json', '--url', serve.url]);
      expect(faults.stdout).toBe('');
    });

    it(`--count ${count}: post --batch resends each line with its key; exit 0, one copy each`, async () => {
      const serve = await startServe();
      await dropAcks(serve, count);
      const texts = [`batch ${count} a`, `batch ${count} b`, `batch ${count} c`];
      const lines = texts.map((content) => JSON.stringify({ content })).join('\n');
      const result = await post(serve, ['--batch', '--timeout', '8s'], undefined, `${lines}\n`);
      expect(result.code, result.stderr).toBe(0);
      const results = jsonLines(result.stdout);
      expect(results.map((each) => [each.line, each.post?.text, each.duplicate])).toEqual(
        texts.map((text, index) => [index + 1, text, false]),
      );
      for (const [index, text] of texts.entries())
        expect(await copiesOf(serve, text)).toEqual([results[index].post.id]);
    });
  }

  it('every ack lost: exit 3 naming the key, which --json carries; re-run with it publishes nothing more', async () => {
    const serve = await startServe();
    await dropAcks(serve);
    const result = await post(serve, ['--timeout', '2s', '--json', '-v'], 'never acked');
    expect(result.code, result.stderr).toBe(3);
    const [printed] = jsonLines(result.stdout);
    expect(printed.error).toEqual({ code: 'timeout', message: expect.any(String), idempotencyKey: expect.any(String) });
    const key: string = printed.error.idempotencyKey;
    // -v names the key before the post goes, so a run cut short knows it too.
    expect(result.stderr).toContain(`publishing to macro-wire via ${serve.url}/v1/ws with idempotency key ${key}`);
    expect(result.stderr).toContain(
      `timed out after 2s waiting for ack (the reply to add-stream-post) from ${serve.url}/v1/ws; the post may have been published: re-run with --idempotency-key ${key} to publish it at most once`,
    );
    expectCleanError(result.stderr);
    const [stored] = await copiesOf(serve, 'never acked');
    expect(stored).toBeDefined();

    expect((await runInProcess(['faults', 'clear', '--url', serve.url])).code).toBe(0);
    const again = await post(serve, ['--json', '--idempotency-key', key], 'never acked');
    expect(again.code, again.stderr).toBe(0);
    expect(jsonLines(again.stdout)[0]).toMatchObject({ post: { id: stored }, duplicate: true });
    expect(await copiesOf(serve, 'never acked')).toEqual([stored]);
  });

  it('post --batch, every ack lost: the line reports timeout with its key, exit 3', async () => {
    const serve = await startServe();
    await dropAcks(serve);
    const result = await post(serve, ['--batch', '--timeout', '2s'], undefined, '{"content":"batch never acked"}\n');
    expect(result.code, result.stderr).toBe(3);
    const [line] = jsonLines(result.stdout);
    expect(line.error).toEqual({ code: 'timeout', message: expect.any(String), idempotencyKey: expect.any(String) });
    expect(line.error.message).toContain(
      `the post may have been published: give the line "idempotencyKey": "${line.error.idempotencyKey}" when it is sent again to publish it at most once`,
    );
    expect(await copiesOf(serve, 'batch never acked')).toHaveLength(1);
  });
});
