import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import {
  adminState,
  advanceClock,
  connectAs,
  http,
  KEYS,
  readByServer,
  startTestServer,
  type TestClient,
  untilAdminState,
} from '../support/harness.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function restPost(server: StreamPostsServer, body: Record<string, unknown>) {
  return http(server, 'POST', '/v1/streams/macro-wire/post', {
    key: KEYS.macroWire,
    body: { contentType: 'rawtext', ...body },
  });
}

/** A post on macro-wire hidden until `aheadMs` past the server's clock. */
async function publishHidden(server: StreamPostsServer, aheadMs: number, content = 'embargoed'): Promise<any> {
  const { now } = await adminState(server);
  const releaseAt = new Date(Date.parse(now) + aheadMs).toISOString();
  const reply = await restPost(server, { content, releaseAt });
  expect(reply.body.post).toMatchObject({ hidden: true, releaseAt });
  return reply.body.post;
}

/**
 * Proves `client` was sent no release before now: publishes a marker and waits for it;
 * frames on one connection arrive in order, so an earlier release would be seen first.
 */
async function expectNoReleaseBeforeMarker(server: StreamPostsServer, client: TestClient): Promise<void> {
  const marker = (await restPost(server, { content: `marker ${Math.random()}` })).body.post;
  await client.next((message) => message.event === 'stream.post.created' && message.data.id === marker.id);
  expect(client.messages.filter((message) => message.event === 'stream.post.released')).toEqual([]);
}

describe('GET /_admin/state', () => {
  it('counts connections, subscriptions, posts, scheduled releases and idempotency keys', async () => {
    const server = await startTestServer();
    expect(await adminState(server)).toMatchObject({
      connections: 0,
      subscriptions: 0,
      posts: 5,
      scheduledReleases: 0,
      idempotencyKeys: 0,
      clockOffsetMs: 0,
    });

    const alice = await connectAs(server, KEYS.alice);
    expect(await adminState(server)).toMatchObject({ connections: 1, subscriptions: 0 });
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    await alice.request('on-stream-post-tree', {});
    expect(await adminState(server)).toMatchObject({ connections: 1, subscriptions: 2 });

    const bob = await connectAs(server, KEYS.bob);
    await bob.request('on-stream-post', {});
    expect((await bob.request('on-stream-post', { streamIds: 'crypto-legal' })).data.code).toBe('forbidden');
    expect(await adminState(server)).toMatchObject({ connections: 2, subscriptions: 3 });

    await restPost(server, { content: 'plain' });
    await restPost(server, { content: 'keyed', idempotencyKey: 'k1' });
    await restPost(server, { content: 'keyed', idempotencyKey: 'k1' });
    await publishHidden(server, MINUTE);
    expect(await adminState(server)).toMatchObject({ posts: 8, scheduledReleases: 1, idempotencyKeys: 1 });

    alice.close();
    await alice.closed;
    await untilAdminState(server, (state) => state.connections === 1 && state.subscriptions === 1);
  });
});

describe('POST /_admin/clock', () => {
  it('releases due hidden posts before replying, and only those', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const hidden = await publishHidden(server, MINUTE, 'rate cut');
    expect((await alice.nextEvent('stream.post.created')).data).toMatchObject({
      id: hidden.id,
      text: null,
      hidden: true,
    });

    await advanceClock(server, MINUTE / 2);
    expect(await adminState(server)).toMatchObject({ scheduledReleases: 1, clockOffsetMs: MINUTE / 2 });
    await expectNoReleaseBeforeMarker(server, alice);

    const reply = await http(server, 'POST', '/_admin/clock', { body: { advanceMs: MINUTE / 2 } });
    expect(reply.status).toBe(200);
    expect(reply.body.clockOffsetMs).toBe(MINUTE);
    // Released before the reply: nothing left to wait for.
    expect((await adminState(server)).scheduledReleases).toBe(0);
    const listed = await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=2', { key: KEYS.alice });
    expect(listed.body.posts.find((post: { id: string }) => post.id === hidden.id)).toMatchObject({
      text: 'rate cut',
      hidden: false,
    });
    const released = await alice.nextEvent('stream.post.released');
    expect(released.data).toEqual({ ...hidden, text: 'rate cut', hidden: false });
  });

  it('releases a post due beyond setTimeout’s 24.8-day limit', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const hidden = await publishHidden(server, 40 * DAY);
    await advanceClock(server, 30 * DAY);
    await expectNoReleaseBeforeMarker(server, alice);
    await advanceClock(server, 10 * DAY);
    expect((await alice.nextEvent('stream.post.released')).data).toMatchObject({ id: hidden.id, hidden: false });
  });

  it('expires idempotency keys once the window has passed', async () => {
    const server = await startTestServer();
    const first = await restPost(server, { content: 'nightly', idempotencyKey: 'nightly-1' });
    expect((await adminState(server)).idempotencyKeys).toBe(1);

    await advanceClock(server, 9 * MINUTE);
    expect((await adminState(server)).idempotencyKeys).toBe(1);
    const repeat = await restPost(server, { content: 'nightly', idempotencyKey: 'nightly-1' });
    expect(repeat.status).toBe(200);
    expect(repeat.body.post.id).toBe(first.body.post.id);

    await advanceClock(server, MINUTE);
    expect((await adminState(server)).idempotencyKeys).toBe(0);
    const fresh = await restPost(server, { content: 'nightly', idempotencyKey: 'nightly-1' });
    expect(fresh.status).toBe(201);
    expect(fresh.body.post.id).not.toBe(first.body.post.id);
  });

  it.each([
    ['-1', { body: { advanceMs: -1 } }],
    ['"x"', { body: { advanceMs: 'x' } }],
    ['missing', { body: {} }],
    ['1.5', { body: { advanceMs: 1.5 } }],
    ['null', { body: { advanceMs: null } }],
    ['a numeric string', { body: { advanceMs: '1000' } }],
    ['beyond ten years', { body: { advanceMs: 11 * 366 * DAY } }],
    ['malformed JSON', { rawBody: '{"advanceMs": ', headers: { 'content-type': 'application/json' } }],
  ])('rejects advanceMs %s with 400 and changes nothing', async (_name, request) => {
    const server = await startTestServer();
    await publishHidden(server, MINUTE);
    await restPost(server, { content: 'keyed', idempotencyKey: 'k' });
    const before = await adminState(server);
    const reply = await http(server, 'POST', '/_admin/clock', request);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toMatch(/^(invalid-argument|bad-json)$/);
    const after = await adminState(server);
    expect(after).toMatchObject({ clockOffsetMs: 0, scheduledReleases: 1, idempotencyKeys: 1, posts: before.posts });
  });

  it('accepts only POST', async () => {
    const server = await startTestServer();
    const reply = await http(server, 'GET', '/_admin/clock');
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('POST');
  });
});

describe('POST /_admin/reset', () => {
  it('drops published posts, releases and idempotency keys, and restores the seed history', async () => {
    const server = await startTestServer();
    const seedHistory = (await http(server, 'GET', '/v1/streams/macro-wire/posts', { key: KEYS.alice })).body.posts;
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    await restPost(server, { content: 'to be forgotten', idempotencyKey: 'once' });
    await publishHidden(server, MINUTE);
    expect(await adminState(server)).toMatchObject({ posts: 7, scheduledReleases: 1, idempotencyKeys: 1 });

    const reply = await http(server, 'POST', '/_admin/reset', { body: {} });
    expect(reply).toMatchObject({ status: 200, body: { ok: true } });
    expect(await adminState(server)).toMatchObject({ posts: 5, scheduledReleases: 0, idempotencyKeys: 0 });
    const history = (await http(server, 'GET', '/v1/streams/macro-wire/posts', { key: KEYS.alice })).body.posts;
    expect(history.map((post: { text: string }) => post.text)).toEqual(
      seedHistory.map((post: { text: string }) => post.text),
    );

    // The dropped release never fires; the dropped key no longer deduplicates.
    await advanceClock(server, 2 * MINUTE);
    await expectNoReleaseBeforeMarker(server, alice);
    expect((await restPost(server, { content: 'to be forgotten', idempotencyKey: 'once' })).status).toBe(201);
  });
});

describe('POST /_admin/keep-alive', () => {
  it('runs one round now: pings who answered the last one, terminates who did not, and says how many', async () => {
    // One instance (a port of its own): a round is each instance's own, as its connections are.
    // No timed round comes during the test.
    const server = await startTestServer({ port: 0, keepAliveMs: 3_600_000 });
    const alice = await connectAs(server, KEYS.alice);
    const silent = await connectAs(server, KEYS.bob, { wsOptions: { autoPong: false } });

    const first = await http(server, 'POST', '/_admin/keep-alive', { body: {} });
    expect(first).toMatchObject({ status: 200, body: { pinged: 2, terminated: 0 } });
    await alice.nextEvent('keep-alive');
    await readByServer(alice.ws);
    const second = await http(server, 'POST', '/_admin/keep-alive', { body: {} });
    expect(second).toMatchObject({ status: 200, body: { pinged: 1, terminated: 1 } });
    expect((await silent.closed).code).toBe(1006);
    await alice.nextEvent('keep-alive');
    expect((await adminState(server)).connections).toBe(1);

    const get = await http(server, 'GET', '/_admin/keep-alive');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe('admin switch', () => {
  it('is on by default on 127.0.0.1', async () => {
    const server = await startTestServer();
    expect(server.adminUrl).toBeDefined();
    expect((await http(server, 'GET', '/_admin/state')).status).toBe(200);
  });

  it('answers 404 to every admin endpoint when off, and changes nothing', async () => {
    const server = await startTestServer({ admin: false });
    await restPost(server, { content: 'survives' });
    for (const [method, path, body] of [
      ['GET', '/_admin/state', undefined],
      ['POST', '/_admin/clock', { advanceMs: MINUTE }],
      ['POST', '/_admin/reset', undefined],
      ['POST', '/_admin/keep-alive', {}],
    ] as const) {
      const reply = await http(server, method, path, body === undefined ? {} : { body });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('not-found');
    }
    const [latest] = (await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=1', { key: KEYS.alice })).body
      .posts;
    expect(latest.text).toBe('survives');
    expect((await server.state()).clockOffsetMs).toBe(0);
  });

  it('is off by default on a non-loopback address, unless asked for', async () => {
    const open = await startTestServer({ host: '0.0.0.0' });
    expect((await http(open, 'GET', '/_admin/state')).status).toBe(404);
    const forced = await startTestServer({ host: '0.0.0.0', admin: true });
    expect((await http(forced, 'GET', '/_admin/state')).status).toBe(200);
  });
});
