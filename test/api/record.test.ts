import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, StreamPostsError, type ProxiedFrame } from '../../src/index.js';
import type { Recording } from '../../src/protocol/recording.js';
import { client, take } from '../support/api.js';
import { afterTest, KEYS, startTestServer } from '../support/harness.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-record-api-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

describe('startServer({ record, upstream })', () => {
  it('is a recording proxy the library client uses as it would the service, saved on close()', async () => {
    // With a rate limit, our dialect's `connected` states it: that is how the dialect is told.
    const upstream = await startTestServer({ rateLimit: 200 });
    const file = join(tmp, 'library.json');
    const frames: ProxiedFrame[] = [];
    const proxy = await startServer({
      record: file,
      upstream: upstream.url,
      port: 0,
      onProxiedFrame: (frame) => frames.push(frame),
    });
    afterTest(() => proxy.close().catch(() => {}));
    expect(proxy.url).toBe(`ws://127.0.0.1:${proxy.port}`);
    expect(proxy.file).toBe(file);
    const alice = await client({ url: proxy.url, apiKey: KEYS.alice });
    const posts = alice.subscribe({ streamIds: ['macro-wire'] });
    await posts.ready;
    const publisher = await client({ url: proxy.url, apiKey: KEYS.macroWire });
    await publisher.publish({ streamId: 'macro-wire', content: 'through the proxy' });
    const [event] = await take(posts[Symbol.asyncIterator](), 1);
    expect(event).toMatchObject({ post: { text: 'through the proxy' } });
    await alice.close();
    await publisher.close();
    await proxy.close();

    const recording = JSON.parse(await readFile(file, 'utf8')) as Recording;
    // The library asks for our dialect (hello=1).
    expect(recording.meta.dialect).toBe('stream-posts');
    expect(recording.connections.map((connection) => connection.request.headers['x-api-key'])).toEqual([
      '<key-1>',
      '<key-2>',
    ]);
    expect(frames.some((frame) => frame.direction === 'received' && frame.text.includes('through the proxy'))).toBe(
      true,
    );
    expect(JSON.stringify(frames)).not.toContain(KEYS.alice);
  });

  it('refuses by name an option of the simulated service, a bad upstream, and a record option without record', async () => {
    const file = join(tmp, 'never.json');
    const refused = async (options: Record<string, unknown>) =>
      (await startServer(options as { record: string }).then(
        () => undefined,
        (error: unknown) => error,
      )) as TypeError & { option?: string };
    expect(await refused({ record: file, upstream: 'ws://127.0.0.1:9', seed: 'seed.json' })).toMatchObject({
      name: 'TypeError',
      option: 'seed',
    });
    expect(await refused({ record: file })).toMatchObject({ option: 'upstream' });
    expect(await refused({ record: file, upstream: 'wss://user:secret@example.com' })).toMatchObject({
      option: 'upstream',
    });
    expect(await refused({ record: file, upstream: 'ws://127.0.0.1:9', recordRedact: ['author'] })).toMatchObject({
      option: 'recordRedact',
    });
    expect(await refused({ upstream: 'ws://127.0.0.1:9' })).toMatchObject({ option: 'upstream' });
    expect(await refused({ record: file, upstream: 'ws://127.0.0.1:9', recordMaxBytes: 0 })).toMatchObject({
      name: 'RangeError',
      option: 'recordMaxBytes',
    });
  });

  it('rejects close() with secret-in-recording, naming the place, when a key reached the file before it was known', async () => {
    const upstream = await startTestServer();
    const file = join(tmp, 'unsafe.json');
    const proxy = await startServer({ record: file, upstream: upstream.url, port: 0 });
    // The first request names bob's key in its path before any client presents it as a key.
    await fetch(`${proxy.httpUrl}/v1/streams/${KEYS.bob}/posts`, { headers: { 'x-api-key': KEYS.alice } });
    const bob = await client({ url: proxy.url, apiKey: KEYS.bob });
    await bob.close();
    const error = await proxy.close().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StreamPostsError);
    expect(error).toMatchObject({ code: 'secret-in-recording', path: '$.requests[0].request.path' });
    expect((error as Error).message).not.toContain(KEYS.bob);
    await expect(readFile(file, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
