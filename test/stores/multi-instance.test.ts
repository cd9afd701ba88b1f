import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect as connectLibrary } from '../../src/api/client.js';
import { startServer as startLibraryServer } from '../../src/api/server.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { startServer, type CoreServer } from '../../src/server/assemble.js';
import type { RedisStore } from '../../src/server/stores/redis/redis-store.js';
import {
  adminState,
  advanceClock,
  connectAs,
  http,
  KEYS,
  afterTest,
  publish,
  type TestClient,
  publishMany,
  subscribeAs,
} from '../support/harness.js';
import { createClient } from 'redis';
import { SCRIPTS } from '../../src/server/stores/redis/redis-scripts.js';
import { Arrivals } from '../support/arrivals.js';
import { put } from '../support/media.js';
import { RedisServer } from '../support/redis-server.js';

// Deliveries to three instances on a loaded machine: generous, never the point of a test.
const WAIT_MS = 20_000;
let redis: RedisServer;
let keyspaces = 0;

beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.stop());

/** `count` servers on one Redis keyspace: one service. */
async function instances(count: number, url = redis.url, prefix = `multi${++keyspaces}:`): Promise<CoreServer[]> {
  const servers: CoreServer[] = [];
  // The core server: these tests look into its store, which the library's server keeps to itself.
  for (let i = 0; i < count; i += 1) {
    const server = await startServer({ seed: DEMO_SEED, port: 0, rateLimit: 0, redis: { url, prefix } });
    afterTest(() => server.close());
    servers.push(server);
  }
  return servers;
}

async function subscribe(server: CoreServer, streamIds: string, lastPosts = 0): Promise<TestClient> {
  return subscribeAs(server, KEYS.alice, { streamIds, lastPosts });
}

/** Events of one type up to (and without) the post with `text`, which must arrive. */
async function eventsUntil(client: TestClient, text: string, type = 'stream.post.created'): Promise<any[]> {
  await client.next((m) => m.event === 'stream.post.created' && m.data.text === text, WAIT_MS);
  return client.messages.filter((m) => m.event === type && m.data.text !== text).map((m) => m.data);
}

describe('three instances on one Redis', () => {
  it('deliver every post to every subscriber on every instance exactly once, in one order', async () => {
    const servers = await instances(3);
    const readers = await Promise.all(servers.map((server) => subscribe(server, 'macro-wire,crypto-legal')));
    const [a, b, c] = servers as [CoreServer, CoreServer, CoreServer];
    const sent = await Promise.all([
      publishMany(
        a,
        KEYS.macroWire,
        Array.from({ length: 20 }, (_, i) => ({ streamId: 'macro-wire', content: `a${i}` })),
        WAIT_MS,
      ),
      publishMany(
        b,
        KEYS.macroWire,
        Array.from({ length: 20 }, (_, i) => ({ streamId: 'macro-wire', content: `b${i}` })),
        WAIT_MS,
      ),
      publishMany(
        c,
        KEYS.cryptoLegal,
        Array.from({ length: 20 }, (_, i) => ({ streamId: 'crypto-legal', content: `c${i}` })),
        WAIT_MS,
      ),
    ]);
    expect(sent.flat().every((reply) => reply.event === 'ack')).toBe(true);
    await publish(a, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
    const orders = [];
    for (const reader of readers) {
      const posts = await eventsUntil(reader, 'marker');
      expect(posts).toHaveLength(60);
      expect(new Set(posts.map((post) => post.id)).size).toBe(60);
      // Ids grow in the order Redis stored the posts, whichever instance took them.
      expect(posts.map((post) => post.id)).toEqual(posts.map((post) => post.id).sort());
      orders.push(posts.map((post) => post.text).join());
    }
    expect(new Set(orders).size).toBe(1);
  });

  it('two identical posts sent at the same moment to two instances make one post', async () => {
    const [a, b, c] = (await instances(3)) as [CoreServer, CoreServer, CoreServer];
    const reader = await subscribe(c, 'macro-wire');
    const publisher = await connectAs(a, KEYS.macroWire);
    const data = { streamId: 'macro-wire', content: 'once', contentType: 'rawtext', idempotencyKey: 'same-moment' };
    const [overWs, overRest] = await Promise.all([
      publisher.request('add-stream-post', data),
      http(b, 'POST', '/v1/streams/macro-wire/post', { key: KEYS.macroWire, body: data }),
    ]);
    expect(overWs.event).toBe('ack');
    expect([overWs.data.duplicate, overRest.body.duplicate === true].sort()).toEqual([false, true]);
    expect(overRest.body.post.id).toBe(overWs.data.post.id);
    await publish(a, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
    expect((await eventsUntil(reader, 'marker')).map((post) => post.text)).toEqual(['once']);
  });

  it('fires each of 1,000 releases once, on every instance, when the clock moves through one of them', async () => {
    const servers = await instances(3);
    const [a, b] = servers as [CoreServer, CoreServer];
    const readers = await Promise.all(servers.map((server) => subscribe(server, 'macro-wire,crypto-legal')));
    const releaseAt = new Date(Date.now() + 3_600_000).toISOString();
    const hidden = (stream: string) =>
      Array.from({ length: 500 }, (_, i) => ({ streamId: stream, content: `${stream} ${i}`, releaseAt }));
    const acks = [
      ...(await publishMany(a, KEYS.macroWire, hidden('macro-wire'), WAIT_MS)),
      ...(await publishMany(b, KEYS.cryptoLegal, hidden('crypto-legal'), WAIT_MS)),
    ];
    expect(acks.every((reply) => reply.event === 'ack' && reply.data.post.hidden)).toBe(true);
    expect((await adminState(servers[2]!)).scheduledReleases).toBe(1000);
    await advanceClock(b, 3_600_000);
    expect((await adminState(a)).scheduledReleases).toBe(0);
    await publish(a, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
    const ids = new Set(acks.map((reply) => reply.data.post.id));
    for (const reader of readers) {
      const released = await eventsUntil(reader, 'marker', 'stream.post.released');
      expect(released).toHaveLength(1000);
      expect(new Set(released.map((post) => post.id))).toEqual(ids);
      expect(released.every((post) => post.hidden === false && post.text !== null)).toBe(true);
    }
  });

  it('claims a due release once, not once per instance; a release whose publisher stopped still fires', async () => {
    const prefix = `claims${++keyspaces}:`;
    const [a, b, c] = (await instances(3, redis.url, prefix)) as [CoreServer, CoreServer, CoreServer];
    const readers = await Promise.all([b, c].map((server) => subscribe(server, 'macro-wire')));
    // Every release claim (the script, by digest or in full) that any instance sends for this keyspace.
    const monitor = createClient({ url: redis.url });
    await monitor.connect();
    // Claims counted up to each marker, as MONITOR lists commands in the order Redis ran them.
    let claims = 0;
    const atMark = new Map<string, number>();
    const lines = new Arrivals();
    await monitor.monitor((line: string) => {
      if (line.includes(`"${prefix}"`) && (line.includes(SCRIPTS.releaseDue.sha) || line.includes('ZRANGEBYSCORE')))
        claims += 1;
      const mark = /"ECHO" "(mark-\d+)"/.exec(line)?.[1];
      if (mark !== undefined) {
        atMark.set(mark, claims);
        claims = 0;
      }
      lines.notify();
    });
    const counter = createClient({ url: redis.url });
    await counter.connect();
    /** Claims since the last call, once every instance has shown it sent nothing more before a marker. */
    let marks = 0;
    const claimsSoFar = async (): Promise<number> => {
      for (const server of [a, b, c])
        await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'barrier' });
      const mark = `mark-${++marks}`;
      await counter.sendCommand(['ECHO', mark]);
      await lines.until(
        () => atMark.has(mark),
        WAIT_MS,
        () => new Error(`MONITOR never listed ${mark}`),
      );
      return atMark.get(mark)!;
    };
    const released = (id: string) =>
      Promise.all(
        readers.map((reader) => reader.next((m) => m.event === 'stream.post.released' && m.data.id === id, WAIT_MS)),
      );
    try {
      // On time: the publishing instance claims; the other two see the release in the feed.
      await claimsSoFar();
      const soon = await publish(a, KEYS.macroWire, {
        streamId: 'macro-wire',
        content: 'soon',
        releaseAt: new Date(Date.now() + 1_500).toISOString(),
      });
      expect(soon.hidden).toBe(true);
      await released(soon.id);
      expect(await claimsSoFar()).toBe(1);

      // A clock advance: the advancing instance claims, the publisher leaves it to it.
      const later = await publish(a, KEYS.macroWire, {
        streamId: 'macro-wire',
        content: 'later',
        releaseAt: new Date(Date.now() + 3_600_000).toISOString(),
      });
      await claimsSoFar();
      await advanceClock(b, 7_200_000);
      await released(later.id);
      expect(await claimsSoFar()).toBe(1);

      // Its publisher gone, another instance claims it a few seconds past its time.
      const orphan = await publish(a, KEYS.macroWire, {
        streamId: 'macro-wire',
        content: 'orphan',
        releaseAt: new Date(Date.now() + 7_200_000 + 1_000).toISOString(),
      });
      await a.close();
      await released(orphan.id);
      for (const reader of readers) {
        const shown = reader.messages.filter((m) => m.event === 'stream.post.released').map((m) => m.data.text);
        expect(shown).toEqual(['soon', 'later', 'orphan']);
      }
    } finally {
      await Promise.all([monitor.destroy(), counter.destroy()]);
    }
  });

  it('share the clock and reset: /_admin on one instance moves and resets all', async () => {
    const [a, b] = (await instances(2)) as [CoreServer, CoreServer];
    await publish(a, KEYS.macroWire, { streamId: 'macro-wire', content: 'gone after reset', idempotencyKey: 'k' });
    await advanceClock(a, 5_000);
    expect((await adminState(b)).clockOffsetMs).toBe(5_000);
    expect((await http(b, 'POST', '/_admin/reset', { body: {} })).status).toBe(200);
    const state = await adminState(a);
    expect(state).toMatchObject({ idempotencyKeys: 0, scheduledReleases: 0 });
    const reader = await subscribe(a, 'macro-wire', 100);
    await publish(b, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
    expect((await eventsUntil(reader, 'marker')).map((post) => post.text)).not.toContain('gone after reset');
  });
});

describe('the library', () => {
  it("startServer({ store: 'redis://…' }): two servers are one service; bad store options are refused by name", async () => {
    const options = { port: 0, store: redis.url, redisPrefix: `library${++keyspaces}:` };
    const [a, b] = await Promise.all([startLibraryServer(options), startLibraryServer(options)]);
    try {
      await a.advanceClock(1_000);
      expect((await b.state()).clockOffsetMs).toBe(1_000);
      expect((await b.state()).posts).toBe((await a.state()).posts);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    await expect(startLibraryServer({ store: 'mysql://x' })).rejects.toThrow(/store must be 'memory' or a redis:/);
    await expect(startLibraryServer({ resetStore: true })).rejects.toThrow(TypeError);
  });
});

describe('restarts and outages', () => {
  it('history, pending releases and idempotency survive a restart of Redis and every instance', async () => {
    const persistent = await RedisServer.start({ persistent: true });
    try {
      const prefix = `restart${++keyspaces}:`;
      const first = await instances(2, persistent.url, prefix);
      const kept = await publish(first[0]!, KEYS.macroWire, {
        streamId: 'macro-wire',
        content: 'kept',
        idempotencyKey: 'survives',
      });
      const releaseAt = new Date(Date.now() + 3_600_000).toISOString();
      const pending = await publish(first[1]!, KEYS.macroWire, { streamId: 'macro-wire', content: 'later', releaseAt });
      await Promise.all(first.map((server) => server.close()));
      await persistent.restart();

      const [a, b] = (await instances(2, persistent.url, prefix)) as [CoreServer, CoreServer];
      const reader = await subscribe(b, 'macro-wire', 2);
      await reader.next(
        (m) => m.event === 'stream.post.created' && m.data.id === pending.id && m.data.hidden === true,
        WAIT_MS,
      );
      expect(reader.messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.id)).toEqual([
        kept.id,
        pending.id,
      ]);
      const again = await http(a, 'POST', '/v1/streams/macro-wire/post', {
        key: KEYS.macroWire,
        body: { content: 'kept', contentType: 'rawtext', idempotencyKey: 'survives' },
      });
      expect(again.body).toMatchObject({ duplicate: true, post: { id: kept.id } });
      await advanceClock(a, 3_600_000);
      const released = await reader.nextEvent('stream.post.released', WAIT_MS);
      expect(released.data).toMatchObject({ id: pending.id, text: 'later', hidden: false });
    } finally {
      await persistent.stop();
    }
  });

  it('with Redis down publishes fail with unavailable and nothing acknowledged is lost; the instance recovers by itself', async () => {
    const persistent = await RedisServer.start({ persistent: true });
    try {
      const [server] = (await instances(1, persistent.url, `outage${++keyspaces}:`)) as [CoreServer];
      const acked = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'before' });
      const reader = await subscribe(server, 'macro-wire');
      const publishOnly = await connectAs(server, KEYS.macroWire);
      const withMedia = await http(server, 'POST', '/v1/streams/macro-wire/post', {
        key: KEYS.macroWire,
        body: { content: 'chart to come', uploadMedia: [{ mimeType: 'image/png' }] },
      });
      const uploadUrl = withMedia.body.mediaUploadURLs[0].url as string;
      const mediaUrl = withMedia.body.post.metadata.media[0].url as string;
      const png = Buffer.from('89504e470d0a1a0a', 'hex');
      const upload = () => fetch(uploadUrl, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: png });
      await persistent.kill();

      // Subscribers are told to reconnect: their replay fills what they miss meanwhile.
      expect((await reader.closed).code).toBe(1012);
      // A connection that only publishes has nothing to replay: it stays, and is told why each post fails.
      const during = await publishOnly.request(
        'add-stream-post',
        { streamId: 'macro-wire', content: 'during, on the open connection', contentType: 'rawtext' },
        WAIT_MS,
      );
      expect(during).toMatchObject({ event: 'error', data: { code: 'unavailable' } });
      const refused = await http(server, 'POST', '/v1/streams/macro-wire/post', {
        key: KEYS.macroWire,
        body: { content: 'during', contentType: 'rawtext' },
      });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('unavailable');
      const publisher = await connectAs(server, KEYS.macroWire).catch(() => undefined);
      expect(publisher).toBeUndefined();
      // Uploads and media need Redis too: refused, and the address still takes its upload later.
      const uploadDuring = await upload();
      expect(uploadDuring.status).toBe(503);
      expect(((await uploadDuring.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      expect((await fetch(mediaUrl)).status).toBe(503);

      await persistent.restart();
      await (server.store as RedisStore).following();
      const after = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'after' });
      const again = await publishOnly.request(
        'add-stream-post',
        { streamId: 'macro-wire', content: 'after, on the connection that stayed', contentType: 'rawtext' },
        WAIT_MS,
      );
      expect(again.event).toBe('ack');
      expect((await upload()).status).toBe(200);
      const served = await fetch(mediaUrl);
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
      const back = await subscribe(server, 'macro-wire', 100);
      await back.next((m) => m.event === 'stream.post.created' && m.data.id === after.id, WAIT_MS);
      const texts = back.messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.text);
      expect(texts).toContain(acked.text ?? 'before');
      expect(texts).not.toContain('during');
    } finally {
      await persistent.stop();
    }
  });

  it('a library subscriber dropped by an outage gets what it missed through its replay, each post once', async () => {
    const persistent = await RedisServer.start({ persistent: true });
    try {
      const [a, b] = (await instances(2, persistent.url, `replay${++keyspaces}:`)) as [CoreServer, CoreServer];
      const client = await connectLibrary({ url: a.url, apiKey: KEYS.alice });
      try {
        const subscription = client.subscribe({ streamIds: ['macro-wire'] });
        await subscription.ready;
        await publish(b, KEYS.macroWire, { streamId: 'macro-wire', content: 'before the outage' });
        await persistent.kill();
        await persistent.restart();
        await Promise.all([a, b].map((server) => (server.store as RedisStore).following()));
        await publish(b, KEYS.macroWire, { streamId: 'macro-wire', content: 'while it was away' });
        const texts: (string | null)[] = [];
        for await (const event of subscription) {
          texts.push(event.post.text);
          if (event.post.text === 'while it was away') break;
        }
        expect(texts).toEqual(['before the outage', 'while it was away']);
      } finally {
        await client.close();
      }
    } finally {
      await persistent.stop();
    }
  });
});

describe('uploaded media on several instances', () => {
  /** The same address on another instance: what a load balancer in front of them does. */
  const on = (server: CoreServer, url: string) => `${server.httpUrl}${new URL(url).pathname}`;

  it('an address handed out by one instance takes uploads at the others, the last one kept, and every instance serves it', async () => {
    const [a, b, c] = await instances(3);
    const reply = await http(a!, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'two charts', uploadMedia: [{ mimeType: 'image/png' }, { mimeType: 'image/png' }] },
    });
    expect(reply.status).toBe(201);
    const [first, second] = reply.body.mediaUploadURLs as { url: string }[];
    const served = (reply.body.post.metadata.media as { url: string }[]).map((item) => item.url);
    const bytes = Buffer.from('89504e470d0a1a0a', 'hex');

    expect((await put(on(b!, first!.url), 'image/jpeg', bytes)).status).toBe(415);
    expect((await put(on(b!, first!.url), 'image/png', Buffer.from('first bytes'))).status).toBe(200);
    expect((await put(on(c!, first!.url), 'image/png', bytes)).status).toBe(200);
    for (const server of [a!, b!, c!]) {
      const response = await fetch(on(server, served[0]!));
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    }

    // Two instances asked at once for the same address: each upload is taken whole or refused
    // while the other is under way, and what is served is one of them, whole.
    const statuses = await Promise.all(
      [b!, c!].map(async (server) => (await put(on(server, second!.url), 'image/png', bytes)).status),
    );
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true);
    const secondServed = await fetch(on(a!, served[1]!));
    expect(Buffer.from(await secondServed.arrayBuffer()).equals(bytes)).toBe(true);

    // The window is the shared clock's: moved on one instance, lapsed on all.
    const late = await http(a!, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'late chart', uploadMedia: [{ mimeType: 'image/png' }] },
    });
    await advanceClock(c!, 60 * 60_000 + 1);
    expect((await put(on(b!, late.body.mediaUploadURLs[0].url), 'image/png', bytes)).status).toBe(410);
  });
});
