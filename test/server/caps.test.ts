import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import {
  adminState,
  advanceClock,
  connect,
  connectAs,
  http,
  KEYS,
  SEVERAL_INSTANCES,
  startTestServer,
  type Message,
  publishOn,
} from '../support/harness.js';

const LATER = () => new Date(Date.now() + 3_600_000).toISOString();

function expectLimit(reply: Message): void {
  expect(reply.event).toBe('error');
  expect(reply.data.code).toBe('limit-exceeded');
}

type Counts = Record<'connections' | 'subscriptions' | 'posts' | 'scheduledReleases' | 'idempotencyKeys', number>;

async function counts(server: StreamPostsServer): Promise<Counts> {
  const { connections, subscriptions, posts, scheduledReleases, idempotencyKeys } = await adminState(server);
  return { connections, subscriptions, posts, scheduledReleases, idempotencyKeys };
}

describe('per-key rate limit', () => {
  it("is shared by all of a key's connections and its REST requests", async ({ skip }) => {
    skip(SEVERAL_INSTANCES, "one instance's bucket: with several instances each keeps its own");
    // A connection alone would allow 1,000/s: only the key's shared bucket (burst 2) can refuse.
    const server = await startTestServer({ rateLimit: 1000, keyRateLimit: 1 });
    const before = await counts(server);
    const first = await connectAs(server, KEYS.macroWire);
    const second = await connectAs(server, KEYS.macroWire);
    const startedAt = performance.now();
    const replies = await Promise.all([
      ...[1, 2, 3].map((i) => publishOn(first, { streamId: 'macro-wire', content: `first ${i}` })),
      ...[1, 2, 3].map((i) => publishOn(second, { streamId: 'macro-wire', content: `second ${i}` })),
    ]);
    const rest = await Promise.all(
      [1, 2, 3].map((i) =>
        http(server, 'POST', '/v1/streams/macro-wire/post', {
          key: KEYS.macroWire,
          body: { content: `rest ${i}`, contentType: 'rawtext' },
        }),
      ),
    );
    const refill = Math.ceil((performance.now() - startedAt) / 1000);
    const accepted =
      replies.filter((reply) => reply.event === 'ack').length + rest.filter((reply) => reply.status === 201).length;
    expect(replies.filter((reply) => reply.event !== 'ack').map((reply) => reply.data.code)).toEqual(
      replies.filter((reply) => reply.event !== 'ack').map(() => 'rate-limited'),
    );
    for (const reply of rest.filter((r) => r.status !== 201)) {
      expect(reply.status).toBe(429);
      expect(reply.body.error.code).toBe('rate-limited');
    }
    expect(accepted).toBeGreaterThanOrEqual(2);
    expect(accepted).toBeLessThanOrEqual(2 + refill);
    expect((await counts(server)).posts).toBe(before.posts + accepted);
  });

  it('is off with rateLimit 0 unless given', async () => {
    const server = await startTestServer({ rateLimit: 0 });
    const client = await connectAs(server, KEYS.macroWire);
    const replies = await Promise.all(
      Array.from({ length: 900 }, (_, i) => publishOn(client, { streamId: 'macro-wire', content: `p${i}` })),
    );
    expect(replies.filter((reply) => reply.event !== 'ack')).toEqual([]);
  });
});

describe('connections per key', () => {
  it('refuses a connection past the cap with limit-exceeded and close 1008, and takes one again once a slot is free', async ({
    skip,
  }) => {
    skip(SEVERAL_INSTANCES, "one instance's cap: with several instances each counts its own connections");
    const server = await startTestServer({ maxConnectionsPerKey: 2 });
    const open = [await connectAs(server, KEYS.alice), await connectAs(server, KEYS.alice)];
    const refused = await connect(server, { key: KEYS.alice });
    const error = await refused.nextEvent('error');
    expect(error.data.code).toBe('limit-exceeded');
    expect((await refused.closed).code).toBe(1008);
    expect(refused.messages.map((m) => m.event)).toEqual(['error']);

    // Nothing changed: the refused connection took no slot, the others work, other keys connect.
    expect((await (await connect(server, { key: KEYS.alice })).nextEvent('error')).data.code).toBe('limit-exceeded');
    for (const client of open) expect((await client.request('on-stream-post', {})).event).toBe('sub_ack');
    await connectAs(server, KEYS.bob);

    open[0]!.close();
    await open[0]!.closed;
    // The server may see the close a moment after the client: try until a slot is free.
    for (let attempt = 0; ; attempt += 1) {
      const again = await connect(server, { key: KEYS.alice });
      const first = await again.next();
      if (first.event === 'connected') break;
      expect(first.data.code).toBe('limit-exceeded');
      if (attempt === 50) throw new Error('no slot was freed by the close');
    }
  });
});

describe('subscriptions per connection', () => {
  it('refuses a subscription past the cap with limit-exceeded; a repeat of the same streams replaces, not adds', async () => {
    const server = await startTestServer({ maxSubscriptions: 3 });
    const client = await connectAs(server, KEYS.alice);
    for (const streamIds of ['macro-wire', 'crypto-legal', 'whale-alerts']) {
      expect((await client.request('on-stream-post', { streamIds })).event).toBe('sub_ack');
    }
    const before = await counts(server);
    expectLimit(await client.request('on-stream-post-tree', { streamIds: 'macro-wire' }));
    expect(await counts(server)).toEqual(before);

    // Re-subscribing (in any id order) neither grows the server's state nor hits the cap.
    for (let i = 0; i < 200; i += 1) {
      const streamIds = i % 2 === 0 ? 'macro-wire' : ' macro-wire ,macro-wire';
      expect((await client.request('on-stream-post', { streamIds })).event).toBe('sub_ack');
    }
    expect(await counts(server)).toEqual(before);

    // Each post still arrives once.
    const publisher = await connectAs(server, KEYS.macroWire);
    const posted = await publishOn(publisher, { streamId: 'macro-wire', content: 'once' });
    const marker = await publishOn(publisher, { streamId: 'macro-wire', content: 'marker' });
    const ids: string[] = [];
    for (;;) {
      const { data } = await client.nextEvent('stream.post.created');
      if (data.id === marker.data.post.id) break;
      ids.push(data.id);
    }
    expect(ids).toEqual([posted.data.post.id]);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('pending releases per stream', () => {
  it('refuses a hidden post past the count cap, over WebSocket and REST, until a release frees a slot', async () => {
    const server = await startTestServer({ maxPendingReleases: 2 });
    const publisher = await connectAs(server, KEYS.macroWire);
    const releaseAt = new Date(Date.now() + 60_000).toISOString();
    for (const content of ['h1', 'h2'])
      expect((await publishOn(publisher, { streamId: 'macro-wire', content, releaseAt })).event).toBe('ack');
    const before = await counts(server);
    expectLimit(await publishOn(publisher, { streamId: 'macro-wire', content: 'h3', releaseAt }));
    const rest = await http(server, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'h3', contentType: 'rawtext', releaseAt },
    });
    expect(rest.status).toBe(403);
    expect(rest.body.error.code).toBe('limit-exceeded');
    expect(await counts(server)).toEqual(before);

    // Posts shown at once, and other streams, are not affected.
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'now' })).event).toBe('ack');
    const legal = await connectAs(server, KEYS.cryptoLegal);
    expect(
      (
        await legal.request('add-stream-post', {
          streamId: 'crypto-legal',
          content: 'h',
          contentType: 'rawtext',
          releaseAt,
        })
      ).event,
    ).toBe('ack');

    await advanceClock(server, 120_000);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'h4', releaseAt: LATER() })).event).toBe(
      'ack',
    );
  });

  it('refuses a hidden post that would take the stream past the byte cap', async () => {
    const server = await startTestServer({ maxPendingReleaseBytes: 100 });
    const publisher = await connectAs(server, KEYS.macroWire);
    const releaseAt = LATER();
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'a'.repeat(60), releaseAt })).event).toBe(
      'ack',
    );
    const before = await counts(server);
    expectLimit(await publishOn(publisher, { streamId: 'macro-wire', content: 'é'.repeat(25), releaseAt }));
    expect(await counts(server)).toEqual(before);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'b'.repeat(40), releaseAt })).event).toBe(
      'ack',
    );
  });
});

describe('idempotency keys per stream', () => {
  it('refuses a new key past the count cap; repeats, unkeyed posts and other streams still work; the window frees slots', async () => {
    const server = await startTestServer({ maxIdempotencyKeys: 2, idempotencyWindowMs: 60_000 });
    const publisher = await connectAs(server, KEYS.macroWire);
    const first = await publishOn(publisher, { streamId: 'macro-wire', content: 'k1', idempotencyKey: 'k1' });
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'k2', idempotencyKey: 'k2' })).event).toBe(
      'ack',
    );
    const before = await counts(server);
    expectLimit(await publishOn(publisher, { streamId: 'macro-wire', content: 'k3', idempotencyKey: 'k3' }));
    expect(await counts(server)).toEqual(before);

    const repeat = await publishOn(publisher, { streamId: 'macro-wire', content: 'k1', idempotencyKey: 'k1' });
    expect(repeat.data).toMatchObject({ duplicate: true, post: { id: first.data.post.id } });
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'unkeyed' })).event).toBe('ack');
    const legal = await connectAs(server, KEYS.cryptoLegal);
    expect(
      (
        await legal.request('add-stream-post', {
          streamId: 'crypto-legal',
          content: 'k',
          contentType: 'rawtext',
          idempotencyKey: 'k3',
        })
      ).event,
    ).toBe('ack');

    await advanceClock(server, 61_000);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'k3', idempotencyKey: 'k3' })).event).toBe(
      'ack',
    );
  });

  it('refuses a keyed post whose text would take the stream past the byte cap', async () => {
    const server = await startTestServer({ maxIdempotencyBytes: 100 });
    const publisher = await connectAs(server, KEYS.macroWire);
    expect(
      (await publishOn(publisher, { streamId: 'macro-wire', content: 'a'.repeat(80), idempotencyKey: 'a' })).event,
    ).toBe('ack');
    const before = await counts(server);
    expectLimit(await publishOn(publisher, { streamId: 'macro-wire', content: 'b'.repeat(30), idempotencyKey: 'b' }));
    expect(await counts(server)).toEqual(before);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'b'.repeat(30) })).event).toBe('ack');
  });
});

describe('pending commands per connection', () => {
  it('closes a connection with 1008 when more commands wait for their turn than the cap', async () => {
    const server = await startTestServer({ maxPendingCommands: 5 });
    const client = await connectAs(server, KEYS.macroWire);
    const before = await counts(server);
    // One write: the server reads every frame at once. The publish waits for the store (a
    // subscription is acknowledged at once from memory), and each subscribe waits behind it.
    const socket = (client.ws as unknown as { _socket: Socket })._socket;
    socket.cork();
    client.send({ event: 'add-stream-post', data: { streamId: 'macro-wire', content: 'first' }, requestId: 'p0' });
    for (let i = 0; i < 50; i += 1)
      client.send({ event: 'on-stream-post', data: { streamIds: 'macro-wire' }, requestId: `s${i}` });
    socket.uncork();
    const closed = await client.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toBe('too many commands waiting; wait for replies');
    const after = await counts(server);
    expect(after.subscriptions).toBe(before.subscriptions);
    // The publish had started, and is kept; nothing that waited behind it ran.
    expect(after.posts).toBeLessThanOrEqual(before.posts + 1);
    expect((await connectAs(server, KEYS.alice).then((fresh) => fresh.request('on-stream-post', {}))).event).toBe(
      'sub_ack',
    );
  });
});

describe('releaseAt range', () => {
  it('refuses a date whose UTC form falls outside years 0000-9999, accepts the last millisecond of 9999', async () => {
    const server = await startTestServer();
    const publisher = await connectAs(server, KEYS.macroWire);
    const before = await counts(server);
    for (const releaseAt of ['9999-12-31T23:59:59.999-23:59', '0000-01-01T00:00:00+01:00']) {
      const reply = await publishOn(publisher, { streamId: 'macro-wire', content: 'far', releaseAt });
      expect(reply.event).toBe('error');
      expect(reply.data.code).toBe('invalid-argument');
    }
    expect(await counts(server)).toEqual(before);
    const last = await publishOn(publisher, {
      streamId: 'macro-wire',
      content: 'far',
      releaseAt: '9999-12-31T23:59:59.999Z',
    });
    expect(last.data.post.releaseAt).toBe('9999-12-31T23:59:59.999Z');
  });
});

describe('tree item cashtags', () => {
  it('lists at most 10 coins, each with at most 10 spellings', async () => {
    const server = await startTestServer();
    const reader = await connectAs(server, KEYS.alice);
    expect((await reader.request('on-stream-post-tree', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
    const spellings = ['$btc', '$Btc', '$bTc', '$btC', '$BTc', '$BtC', '$bTC', '$BTC'];
    // All 16 ways to write $btcx: past the 10 spellings kept.
    const variants = Array.from(
      { length: 16 },
      (_, i) => `$${[...'btcx'].map((c, bit) => ((i >> bit) & 1 ? c.toUpperCase() : c)).join('')}`,
    );
    const coins = Array.from({ length: 30 }, (_, i) => `$C${i}X`);
    const publisher = await connectAs(server, KEYS.macroWire);
    await publishOn(publisher, { streamId: 'macro-wire', content: [...spellings, ...variants, ...coins].join(' ') });
    const item = await reader.next((m) => m.event === undefined);
    expect(item['suggestions']).toHaveLength(10);
    const suggestions = item['suggestions'] as { coin: string; found: string[] }[];
    expect(suggestions[0]).toEqual({ coin: 'BTC', found: spellings });
    expect(suggestions[1]!.coin).toBe('BTCX');
    expect(suggestions[1]!.found).toHaveLength(10);
    expect(suggestions.at(-1)!.coin).toBe('C7X');
  });
});
