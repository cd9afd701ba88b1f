import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { connectAs, http, KEYS, postCount, startTestServer } from '../support/harness.js';

function postTo(server: StreamPostsServer, body: unknown, streamId = 'macro-wire', key: string = KEYS.macroWire) {
  return http(server, 'POST', `/v1/streams/${streamId}/post`, { key, body });
}

describe('publishing as public publishers do', () => {
  it('takes a post without contentType as rawtext, over REST and over the WebSocket', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const rest = await postTo(server, { content: '*not* markdown' });
    expect(rest.status).toBe(201);
    expect(rest.body.post).toMatchObject({ text: '*not* markdown', contentType: 'rawtext' });
    expect((await alice.nextEvent('stream.post.created')).data).toMatchObject({ contentType: 'rawtext' });

    const publisher = await connectAs(server, KEYS.macroWire);
    const ack = await publisher.request('add-stream-post', { streamId: 'macro-wire', content: 'plain' });
    expect(ack.event).toBe('ack');
    expect(ack.data.post).toMatchObject({ text: 'plain', contentType: 'rawtext' });
    expect((await alice.nextEvent('stream.post.created')).data).toMatchObject({
      text: 'plain',
      contentType: 'rawtext',
    });
  });

  it('ignores fields it does not know (an id, a numeric createdAt) instead of refusing the post', async () => {
    const server = await startTestServer();
    const reply = await postTo(server, {
      id: 'client-chosen-id',
      createdAt: 1_700_000_000_000,
      content: 'extra fields',
      contentType: 'markdown',
      tags: ['x'],
    });
    expect(reply.status).toBe(201);
    expect(reply.body.post.id).not.toBe('client-chosen-id');
    expect(Date.parse(reply.body.post.createdAt)).toBeGreaterThan(1_700_000_000_000);
    expect(reply.body.post).not.toHaveProperty('tags');
    const publisher = await connectAs(server, KEYS.macroWire);
    const ack = await publisher.request('add-stream-post', {
      streamId: 'macro-wire',
      content: 'extra over ws',
      id: 5,
      createdAt: 1,
    });
    expect(ack.event).toBe('ack');
  });

  it('stores metadata and delivers it on the post: to a subscriber, in history and in the REST list', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const metadata = {
      type: 'news',
      sourceLink: 'https://example.org/cpi',
      sourceName: 'Example Wire',
      headline: 'CPI cools',
      icon: { url: 'https://example.org/icon.png' },
      sourceTimestamp: 1_795_262_400_000,
    };
    const reply = await postTo(server, { content: 'CPI 0.2%', contentType: 'rawtext', metadata });
    expect(reply.status).toBe(201);
    expect(reply.body.post.metadata).toEqual(metadata);
    expect((await alice.nextEvent('stream.post.created')).data).toEqual(reply.body.post);
    const [listed] = (await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=1', { key: KEYS.bob })).body.posts;
    expect(listed.metadata).toEqual(metadata);
    const later = await connectAs(server, KEYS.bob);
    await later.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 1 });
    expect((await later.nextEvent('stream.post.created')).data.metadata).toEqual(metadata);
    // A post without metadata has no metadata field at all.
    const plain = await postTo(server, { content: 'no metadata', contentType: 'rawtext' });
    expect(plain.body.post).not.toHaveProperty('metadata');
  });

  it('gives the original post, metadata included, to a repeat with the same idempotencyKey', async () => {
    const server = await startTestServer();
    const body = { content: 'once', metadata: { headline: 'first' }, idempotencyKey: 'meta-1' };
    const first = await postTo(server, body);
    const again = await postTo(server, { ...body, metadata: { headline: 'second' } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ post: first.body.post, duplicate: true });
  });

  it.each([
    ['metadata not an object', { metadata: 'headline' }, 'metadata'],
    ['metadata an array', { metadata: [1] }, 'metadata'],
    ['metadata over 16 KiB', { metadata: { text: 'x'.repeat(16 * 1024) } }, 'metadata'],
    ['metadata nested too deep', { metadata: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) }, 'metadata'],
    ['uploadMedia not an array', { uploadMedia: { mimeType: 'image/png' } }, 'uploadMedia'],
    ['five uploads', { uploadMedia: Array(5).fill({ mimeType: 'image/png' }) }, 'uploadMedia'],
    ['an upload without a type', { uploadMedia: [{ mimeType: 'image/png' }, {}] }, 'uploadMedia[1].mimeType'],
    [
      'metadata.media not a list beside uploads',
      { metadata: { media: 'x' }, uploadMedia: [{ mimeType: 'image/png' }] },
      'metadata.media',
    ],
  ])('refuses %s with 400 naming it, and stores nothing', async (_name, change, named) => {
    const server = await startTestServer();
    const before = await postCount(server);
    const reply = await postTo(server, { content: 'x', contentType: 'rawtext', ...change });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid-argument');
    expect(reply.body.error.message).toContain(named);
    expect(await postCount(server)).toBe(before);
  });

  it('accepts metadata of exactly 16 KiB', async () => {
    const server = await startTestServer();
    const wrapper = JSON.stringify({ text: '' }).length;
    const reply = await postTo(server, { content: 'x', metadata: { text: 'x'.repeat(16 * 1024 - wrapper) } });
    expect(reply.status).toBe(201);
  });
});
