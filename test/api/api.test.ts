import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { connect, startServer, StreamPostsError } from '../../src/index.js';
import { client, take } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('startServer', () => {
  it('gives URLs and the seed keys, and reports state', async () => {
    const srv = await server();
    expect(srv.url).toBe(`ws://127.0.0.1:${srv.port}`);
    expect(srv.httpUrl).toBe(`http://127.0.0.1:${srv.port}`);
    expect(srv.adminUrl).toBe(`http://127.0.0.1:${srv.port}/_admin`);
    expect(srv.keys.readers['alice']).toBe('sp_demo_reader_alice');
    expect(srv.keys.streams['macro-wire']).toBe('sp_demo_stream_macro_wire');
    const state = await srv.state();
    expect(state).toMatchObject({ connections: 0, subscriptions: 0, clockOffsetMs: 0 });
    // A printed server shows no keys.
    expect(JSON.stringify(srv)).not.toContain('sp_demo');
  });

  it('takes a seed object or a seed file, and names the bad field of a bad one', async () => {
    const seed = {
      users: [{ id: 'ann', name: 'Ann', readerKey: 'reader-key-ann', follows: ['news'] }],
      streams: [{ id: 'news', name: 'News', owner: 'ann', key: 'stream-key-news' }],
    };
    const srv = await server({ seed });
    expect(srv.keys).toEqual({ readers: { ann: 'reader-key-ann' }, streams: { news: 'stream-key-news' } });

    const bad = {
      users: [{ id: 'ann', name: 'Ann', readerKey: 'reader-key-ann' }],
      streams: [{ id: 'news', name: 'News', owner: 'nobody', key: 'stream-key-news' }],
    };
    const error = await startServer({ port: 0, seed: bad }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect(error).toMatchObject({ code: 'invalid-seed', path: 'seed.streams[0].owner' });

    const missing = await startServer({ port: 0, seed: '/nonexistent/seed.json' }).catch((caught: unknown) => caught);
    expect(missing).toMatchObject({ code: 'invalid-seed' });
  });

  it("changes no global state: zod's config stays as it was", async () => {
    await expect(startServer({ port: 0, seed: { users: [{ id: 1 }] } as never })).rejects.toMatchObject({
      code: 'invalid-seed',
      path: 'seed.users[0].id',
    });
    expect(z.config()).toEqual({});
  });

  it('rejects bad options naming them', async () => {
    await expect(startServer({ port: -1 })).rejects.toThrow(RangeError);
    await expect(startServer({ port: -1 })).rejects.toThrow(/port/);
    await expect(startServer({ rateLimit: '5' as unknown as number })).rejects.toThrow(TypeError);
    await expect(startServer({ prot: 0 } as never)).rejects.toThrow(/unknown option "prot"/);
    const srv = await server();
    await expect(srv.advanceClock(-5)).rejects.toThrow(RangeError);
    const url = srv.url;
    const apiKey = srv.keys.readers['alice']!;
    await expect(connect({ url, apiKey, heartbeat: { intervalMs: 0, timeoutMs: 10 } })).rejects.toThrow(
      /heartbeat.intervalMs must be a whole number of ms/,
    );
    await expect(connect({ url, apiKey, heartbeat: { intervalMs: 10 } as never })).rejects.toThrow(
      /heartbeat.timeoutMs/,
    );
    await expect(
      connect({ url, apiKey, heartbeat: { intervalMs: 10, timeoutMs: 10, every: 1 } as never }),
    ).rejects.toThrow('heartbeat: unknown option "every"');
  });

  it('closes once and works with await using', async () => {
    let url: string;
    {
      await using srv = await startServer({ port: 0 });
      url = srv.httpUrl;
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    }
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});

describe('connect, subscribe and publish', () => {
  it('delivers a published post to a subscriber; the same idempotency key gives the same post', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    expect(reader.userId).toBe('alice');
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'] });
    expect((await subscription.ready).streamIds).toEqual(['macro-wire']);
    const events = subscription[Symbol.asyncIterator]();

    const first = await publisher.publish({ streamId: 'macro-wire', content: 'CPI 3.1%', idempotencyKey: 'cpi-1' });
    expect(first).toMatchObject({
      duplicate: false,
      idempotencyKey: 'cpi-1',
      post: { streamId: 'macro-wire', text: 'CPI 3.1%' },
    });
    const again = await publisher.publish({ streamId: 'macro-wire', content: 'CPI 3.1%', idempotencyKey: 'cpi-1' });
    expect(again.duplicate).toBe(true);
    expect(again.post.id).toBe(first.post.id);
    const generated = await publisher.publish({ streamId: 'macro-wire', content: 'GDP' });
    expect(generated.idempotencyKey).toMatch(/^sp-/);

    const [created, next] = await take(events, 2);
    expect(created).toEqual({ type: 'created', history: false, format: 'post', post: first.post });
    expect(next).toMatchObject({ type: 'created', post: { text: 'GDP' } });
    await subscription.close();
  });

  it('shares one connection between subscriptions and publishes', async () => {
    const srv = await server();
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const posts = owner.subscribe({ streamIds: ['macro-wire'] });
    const tree = owner.subscribe({ streamIds: ['macro-wire'], format: 'tree' });
    await Promise.all([posts.ready, tree.ready]);
    expect((await srv.state()).connections).toBe(1);
    const { post } = await owner.publish({ streamId: 'macro-wire', content: '# Rates held', contentType: 'markdown' });
    const [asPost] = await take(posts[Symbol.asyncIterator](), 1);
    const [asTree] = await take(tree[Symbol.asyncIterator](), 1);
    expect(asPost).toMatchObject({ format: 'post', post: { id: post.id } });
    expect(asTree).toMatchObject({ type: 'created', format: 'tree', item: { _id: post.id, streamId: 'macro-wire' } });
  });

  it("knows a stream key's stream and the service's clock from connected", async () => {
    const srv = await server();
    const { now } = await srv.advanceClock(3_600_000);
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    expect(owner.streamId).toBe('macro-wire');
    expect(reader.streamId).toBeUndefined();
    expect(Date.parse(owner.serverTime!)).toBeGreaterThanOrEqual(Date.parse(now));
  });

  it('delivers history (lastPosts) first, and a subscription only gets its own streams', async () => {
    const srv = await server();
    const macro = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const legal = await client({ url: srv.url, apiKey: srv.keys.streams['crypto-legal']! });
    await macro.publish({ streamId: 'macro-wire', content: 'old news' });
    const alice = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const onlyMacro = alice.subscribe({ streamIds: ['macro-wire'], lastPosts: 1 });
    const onlyLegal = alice.subscribe({ streamIds: ['crypto-legal'] });
    await Promise.all([onlyMacro.ready, onlyLegal.ready]);
    await legal.publish({ streamId: 'crypto-legal', content: 'ruling' });
    await macro.publish({ streamId: 'macro-wire', content: 'fresh' });
    const macroEvents = await take(onlyMacro[Symbol.asyncIterator](), 2);
    expect(macroEvents.map((event) => event.post.text)).toEqual(['old news', 'fresh']);
    const [legalEvent] = await take(onlyLegal[Symbol.asyncIterator](), 1);
    expect(legalEvent?.post.text).toBe('ruling');
  });

  it('shows a hidden post, then releases it when the clock is advanced; reset goes back to the seed', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['bob']! });
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'] });
    await subscription.ready;
    const events = subscription[Symbol.asyncIterator]();
    const state = await srv.state();
    const releaseAt = new Date(Date.parse(state.now) + 3_600_000);
    const { post } = await publisher.publish({
      streamId: 'macro-wire',
      content: 'embargoed',
      releaseAt,
      idempotencyKey: 'embargo',
    });
    expect(post.hidden).toBe(true);
    expect((await srv.state()).idempotencyKeys).toBe(1);
    const [hidden] = await take(events, 1);
    expect(hidden).toMatchObject({ type: 'created', post: { id: post.id, hidden: true, text: null } });

    await srv.advanceClock(3_600_000);
    const [released] = await take(events, 1);
    expect(released).toMatchObject({ type: 'released', post: { id: post.id, hidden: false, text: 'embargoed' } });
    // An hour is past the 10-minute idempotency window: the key has expired, and publishes anew.
    expect((await srv.state()).idempotencyKeys).toBe(0);
    const later = await publisher.publish({ streamId: 'macro-wire', content: 'embargoed', idempotencyKey: 'embargo' });
    expect(later.duplicate).toBe(false);

    const before = (await srv.state()).posts;
    await srv.reset();
    const after = await srv.state();
    expect(after.posts).toBeLessThan(before);
    expect(after).toMatchObject({ scheduledReleases: 0, idempotencyKeys: 0 });
  });

  it('ends the iteration on break and on client close', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const first = reader.subscribe({ streamIds: ['macro-wire'] });
    await first.ready;
    await publisher.publish({ streamId: 'macro-wire', content: 'one' });
    for await (const event of first) {
      expect(event.post.text).toBe('one');
      break;
    }
    const second = reader.subscribe();
    await second.ready;
    const ended = (async () => {
      const seen: string[] = [];
      for await (const event of second) seen.push(event.post.id);
      return seen;
    })();
    await reader.close();
    expect(await ended).toEqual([]);
    expect(() => reader.subscribe()).toThrow(expect.objectContaining({ code: 'closed' }));
    await expect(reader.publish({ streamId: 'macro-wire', content: 'x' })).rejects.toMatchObject({ code: 'closed' });
  });

  it('ends the iteration when the signal aborts, normally; the client goes on', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const stop = new AbortController();
    const subscription = reader.subscribe({ streamIds: ['macro-wire'], signal: stop.signal });
    await subscription.ready;
    await publisher.publish({ streamId: 'macro-wire', content: 'one' });
    const seen: string[] = [];
    for await (const event of subscription) {
      seen.push(event.post.text ?? '');
      stop.abort();
    }
    expect(seen).toEqual(['one']);
    const aborted = reader.subscribe({ signal: stop.signal });
    expect(await aborted[Symbol.asyncIterator]().next()).toEqual({ value: undefined, done: true });
    expect(() => reader.subscribe({ signal: 'stop' as never })).toThrow(/signal must be an AbortSignal/);
    const again = reader.subscribe({ streamIds: ['macro-wire'] });
    await again.ready;
  });
});
