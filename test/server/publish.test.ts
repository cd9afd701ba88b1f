import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import {
  adminState,
  advanceClock,
  connectAs,
  KEYS,
  publish,
  startTestServer,
  type Message,
  type TestClient,
  subscribeAs,
} from '../support/harness.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function isPostEvent(message: Message): boolean {
  return message.event === 'stream.post.created' || message.event === 'stream.post.released';
}

/** A newsdesk reader (owner of every demo stream) subscribed to one stream. */
async function subscribe(server: StreamPostsServer, streamIds = 'macro-wire'): Promise<TestClient> {
  return subscribeAs(server, KEYS.newsdesk, { streamIds });
}

/** Post events the subscriber got before a marker published now; the marker is the barrier. */
async function postEventsBeforeMarker(server: StreamPostsServer, client: TestClient): Promise<Message[]> {
  const marker = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
  const seen: Message[] = [];
  for (;;) {
    const message = await client.next(isPostEvent);
    if (message.data.id === marker.id) return seen;
    seen.push(message);
  }
}

async function serverNow(server: StreamPostsServer): Promise<number> {
  return Date.parse((await adminState(server)).now);
}

function macro(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { streamId: 'macro-wire', content, contentType: 'rawtext', ...extra };
}

describe('add-stream-post', () => {
  it('acks with the full post, stamped with the server clock, and duplicate false', async () => {
    const server = await startTestServer();
    await advanceClock(server, DAY);
    const publisher = await connectAs(server, KEYS.whaleAlerts);
    const before = await serverNow(server);
    const reply = await publisher.request('add-stream-post', {
      streamId: 'whale-alerts',
      content: '5,000 ETH to a fresh wallet',
      contentType: 'markdown',
      customTarget: 'ETH',
    });
    const second = await publisher.request('add-stream-post', {
      streamId: 'whale-alerts',
      content: 'and another',
      contentType: 'rawtext',
      customTarget: 'BTC',
    });
    const after = await serverNow(server);

    expect(reply.event).toBe('ack');
    expect(reply.data).toEqual({
      post: {
        id: expect.stringMatching(ULID),
        streamId: 'whale-alerts',
        streamName: 'Whale Alerts',
        text: '5,000 ETH to a fresh wallet',
        contentType: 'markdown',
        createdAt: expect.stringMatching(ISO_MS),
        releaseAt: null,
        hidden: false,
        customTarget: 'ETH',
      },
      duplicate: false,
    });
    const createdAt = Date.parse(reply.data.post.createdAt);
    expect(createdAt).toBeGreaterThanOrEqual(before);
    expect(createdAt).toBeLessThanOrEqual(after);
    expect(decodeTime(reply.data.post.id)).toBe(createdAt);
    expect(second.data.post.id > reply.data.post.id).toBe(true);
  });

  it.each([
    ['markdown', '## CPI\n\n- **core** _0.2%_ `m/m`\n> [src](https://example.org/a?b=1&c=2) $BTC 🚀 «ünï»  \n'],
    ['rawtext', '<b>not html</b>\t"quotes" \\ back\\slash\r\nCRLF\u2028sep\u0000nul  '],
    ['rawtext', 'é'.repeat(32 * 1024)], // exactly 64 KiB as UTF-8: the largest allowed
  ])('delivers %s content to a subscriber exactly as published', async (contentType, text) => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: text, contentType });
    expect(post).toMatchObject({ text, contentType });
    const delivered = await subscriber.nextEvent('stream.post.created');
    expect(delivered.data).toEqual(post);
  });

  it.each([
    ['a reader key', KEYS.alice, macro('nope'), 'forbidden'],
    ["another stream's key", KEYS.cryptoLegal, macro('nope'), 'forbidden'],
    ['an unknown stream', KEYS.macroWire, macro('nope', { streamId: 'no-such-stream' }), 'not-found'],
  ])('rejects publishing with %s and creates nothing', async (_name, key, data, code) => {
    const server = await startTestServer();
    const before = await adminState(server);
    const client = await connectAs(server, key);
    const withSideEffects = {
      ...data,
      releaseAt: new Date(Date.parse(before.now) + DAY).toISOString(),
      idempotencyKey: 'k',
    };
    const reply = await client.request('add-stream-post', withSideEffects);
    expect(reply.event).toBe('error');
    expect(reply.data.code).toBe(code);
    const after = await adminState(server);
    expect([after.posts, after.scheduledReleases, after.idempotencyKeys]).toEqual([
      before.posts,
      before.scheduledReleases,
      before.idempotencyKeys,
    ]);
  });
});

describe('releaseAt', () => {
  it('hides a future post until releaseAt, then releases it once', async () => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const releaseAt = (await serverNow(server)) + 2 * 60 * MINUTE;
    // Given with a +02:00 offset; the wire form is UTC with milliseconds.
    const given = new Date(releaseAt + 2 * 60 * MINUTE).toISOString().replace('Z', '+02:00');
    const post = await publish(server, KEYS.macroWire, macro('embargoed', { releaseAt: given }));
    expect(post).toMatchObject({ text: 'embargoed', hidden: true, releaseAt: new Date(releaseAt).toISOString() });

    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => [m.event, m.data])).toEqual([
      ['stream.post.created', { ...post, text: null, metadata: null }],
    ]);
    expect((await adminState(server)).scheduledReleases).toBe(1);

    await advanceClock(server, 2 * 60 * MINUTE);
    const released = await subscriber.nextEvent('stream.post.released');
    expect(released.data).toEqual({ ...post, hidden: false });
    expect(await postEventsBeforeMarker(server, subscriber)).toEqual([]);
    expect((await adminState(server)).scheduledReleases).toBe(0);
  });

  it('has no hidden phase when releaseAt is in the past', async () => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const releaseAt = new Date((await serverNow(server)) - MINUTE).toISOString();
    const post = await publish(server, KEYS.macroWire, macro('already out', { releaseAt }));
    expect(post).toMatchObject({ text: 'already out', hidden: false, releaseAt });
    expect((await adminState(server)).scheduledReleases).toBe(0);
    await advanceClock(server, DAY);
    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => [m.event, m.data])).toEqual([
      ['stream.post.created', post],
    ]);
  });

  it('releases a post 200 days ahead (past the 24.8-day timer limit) once, on time', async () => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const releaseAt = new Date((await serverNow(server)) + 200 * DAY).toISOString();
    const post = await publish(server, KEYS.macroWire, macro('far ahead', { releaseAt }));
    expect(post.hidden).toBe(true);
    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => m.event)).toEqual(['stream.post.created']);

    await advanceClock(server, 100 * DAY);
    expect(await postEventsBeforeMarker(server, subscriber)).toEqual([]);
    expect((await adminState(server)).scheduledReleases).toBe(1);

    await advanceClock(server, 100 * DAY + MINUTE);
    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => [m.event, m.data])).toEqual([
      ['stream.post.released', { ...post, hidden: false }],
    ]);
    await advanceClock(server, DAY);
    expect(await postEventsBeforeMarker(server, subscriber)).toEqual([]);
  });
});

describe('idempotencyKey', () => {
  it('acks a repeat on the same stream with the original post and publishes once', async () => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const { posts } = await adminState(server);
    const publisher = await connectAs(server, KEYS.macroWire);
    const first = await publisher.request('add-stream-post', macro('once', { idempotencyKey: 'k-1' }));
    const second = await publisher.request('add-stream-post', macro('once', { idempotencyKey: 'k-1' }));
    expect(first.data.duplicate).toBe(false);
    expect(second.data).toEqual({ post: first.data.post, duplicate: true });
    expect((await adminState(server)).posts).toBe(posts + 1);
    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => m.data.id)).toEqual([first.data.post.id]);
  });

  it('scopes keys to the stream', async () => {
    const server = await startTestServer();
    const macroPost = await publish(server, KEYS.macroWire, macro('macro', { idempotencyKey: 'shared' }));
    const legal = await connectAs(server, KEYS.cryptoLegal);
    const data = { streamId: 'crypto-legal', content: 'legal', contentType: 'rawtext', idempotencyKey: 'shared' };
    const first = await legal.request('add-stream-post', data);
    expect(first.data.duplicate).toBe(false);
    expect(first.data.post).toMatchObject({ streamId: 'crypto-legal', text: 'legal' });
    expect(first.data.post.id).not.toBe(macroPost.id);
    const repeat = await legal.request('add-stream-post', data);
    expect(repeat.data).toEqual({ post: first.data.post, duplicate: true });
  });

  it.each([
    ['the default 10-minute window', {}, 9 * MINUTE, MINUTE + 1],
    ['a 1-second window', { idempotencyWindowMs: 1000 }, 500, 600],
  ])('publishes anew after %s', async (_name, options, inside, rest) => {
    const server = await startTestServer(options);
    const publisher = await connectAs(server, KEYS.macroWire);
    const data = macro('windowed', { idempotencyKey: 'w' });
    const first = await publisher.request('add-stream-post', data);
    await advanceClock(server, inside);
    expect((await publisher.request('add-stream-post', data)).data).toEqual({ post: first.data.post, duplicate: true });
    await advanceClock(server, rest);
    const fresh = await publisher.request('add-stream-post', data);
    expect(fresh.data.duplicate).toBe(false);
    expect(fresh.data.post.id).not.toBe(first.data.post.id);
    expect((await publisher.request('add-stream-post', data)).data).toEqual({ post: fresh.data.post, duplicate: true });
  });

  it('publishes once when two connections send the same command at the same moment', async () => {
    const server = await startTestServer();
    const subscriber = await subscribe(server);
    const { posts } = await adminState(server);
    const [a, b] = await Promise.all([connectAs(server, KEYS.macroWire), connectAs(server, KEYS.macroWire)]);
    const data = macro('raced', { idempotencyKey: 'race' });
    const replies = await Promise.all([a.request('add-stream-post', data), b.request('add-stream-post', data)]);
    expect(replies.map((reply) => reply.event)).toEqual(['ack', 'ack']);
    expect(replies.map((reply) => reply.data.duplicate).sort()).toEqual([false, true]);
    expect(replies[0]!.data.post).toEqual(replies[1]!.data.post);
    expect((await adminState(server)).posts).toBe(posts + 1);
    expect((await postEventsBeforeMarker(server, subscriber)).map((m) => m.data.id)).toEqual([
      replies[0]!.data.post.id,
    ]);
  });
});
