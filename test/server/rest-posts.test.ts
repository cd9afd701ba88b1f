import { describe, expect, it } from 'vitest';
import type { Post, StreamPostsServer } from '../../src/index.js';
import { advanceClock, http, KEYS, restPublish, startTestServer } from '../support/harness.js';

/** `count` posts on macro-wire over REST (`post 0` first), `spacingMs` apart on the server's clock. */
async function publishNumbered(server: StreamPostsServer, count: number, spacingMs = 0): Promise<Post[]> {
  const posts: Post[] = [];
  for (let i = 0; i < count; i += 1) {
    if (spacingMs > 0) await advanceClock(server, spacingMs);
    posts.push(await restPublish(server, KEYS.macroWire, 'macro-wire', { content: `post ${i}` }));
  }
  return posts;
}

function posts(server: StreamPostsServer, query: string, key: string = KEYS.alice) {
  return http(server, 'GET', `/v1/streams/macro-wire/posts${query}`, { key });
}

describe('GET /v1/streams/{id}/posts: pages', () => {
  it('pages newest first to the end, each post once, with nextToken or cursor', async () => {
    const server = await startTestServer();
    await publishNumbered(server, 23);
    const everything = (await posts(server, '?limit=100')).body;
    expect(everything.nextToken).toBeUndefined();
    expect(everything.posts).toHaveLength(24); // and the seed's post
    for (const word of ['nextToken', 'cursor']) {
      const pages: string[][] = [];
      let token: string | undefined;
      do {
        const reply = await posts(
          server,
          `?limit=5${token === undefined ? '' : `&${word}=${encodeURIComponent(token)}`}`,
        );
        expect(reply.status).toBe(200);
        pages.push(reply.body.posts.map((post: { id: string }) => post.id));
        token = reply.body.nextToken;
      } while (token !== undefined);
      expect(pages.map((page) => page.length)).toEqual([5, 5, 5, 5, 4]);
      expect(pages.flat()).toEqual(everything.posts.map((post: { id: string }) => post.id));
    }
  });

  it('repeats no post when new ones arrive between pages', async () => {
    const server = await startTestServer();
    await publishNumbered(server, 6);
    const first = (await posts(server, '?limit=4')).body;
    await publishNumbered(server, 3);
    const second = (await posts(server, `?limit=4&nextToken=${first.nextToken}`)).body;
    const seen = [...first.posts, ...second.posts].map((post: { id: string }) => post.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(7); // 6 published and the seed's post, nothing newer
    expect(second.nextToken).toBeUndefined();
  });

  it('bounds createdAt with fromDate and toDate, both inclusive', async () => {
    const server = await startTestServer();
    const published = await publishNumbered(server, 5, 60_000);
    const from = published[1]!.createdAt;
    const to = published[3]!.createdAt;
    const reply = await posts(server, `?fromDate=${from}&toDate=${to}`);
    expect(reply.status).toBe(200);
    expect(reply.body.posts.map((post: { id: string }) => post.id)).toEqual(
      [published[3], published[2], published[1]].map((post) => post!.id),
    );
    const paged = (await posts(server, `?fromDate=${from}&limit=2`)).body;
    expect(paged.posts.map((post: { id: string }) => post.id)).toEqual([published[4]!.id, published[3]!.id]);
    const rest = (await posts(server, `?fromDate=${from}&limit=2&nextToken=${paged.nextToken}`)).body;
    expect(rest.posts.map((post: { id: string }) => post.id)).toEqual([published[2]!.id, published[1]!.id]);
    expect(rest.nextToken).toBeUndefined();
  });

  it.each([
    ['nextToken=%%%', 'nextToken'],
    ['nextToken=abc', 'nextToken'],
    [`nextToken=${Buffer.from('{"before":"not-an-id"}').toString('base64')}`, 'nextToken'],
    [`cursor=${Buffer.from('"text"').toString('base64')}`, 'cursor'],
    ['nextToken=eyJhIjoxfQ&cursor=eyJiIjoxfQ', 'nextToken'],
    ['fromDate=yesterday', 'fromDate'],
    ['toDate=2026-02-30T00:00:00Z', 'toDate'],
    ['fromDate=2026-02-02T00:00:00Z&toDate=2026-02-01T00:00:00Z', 'fromDate'],
    ['limit=101', 'limit'],
  ])('refuses %s with 400 naming %s', async (query, parameter) => {
    const server = await startTestServer();
    const reply = await posts(server, `?${query}`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid-argument');
    expect(reply.body.error.message).toContain(parameter);
  });
});
