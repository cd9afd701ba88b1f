import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/protocol/errors.js';
import { AdjustableClock } from '../../src/server/clock.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { parseSeed } from '../../src/server/service/seed.js';
import type { PublishResult, StoreEvent } from '../../src/server/stores/store.js';
import { RedisStore, type RedisStoreOptions } from '../../src/server/stores/redis/redis-store.js';
import { publishRequest, redisForFile } from '../support/stores.js';
import { Arrivals } from '../support/arrivals.js';
import { until } from '../support/poll.js';
import { RedisServer } from '../support/redis-server.js';

const redis = redisForFile();
const freshPrefix = () => redis.prefix();

async function open(options: Partial<RedisStoreOptions> & { prefix: string }): Promise<RedisStore> {
  const store = await RedisStore.open({
    url: redis.url,
    seed: DEMO_SEED,
    clock: new AdjustableClock(),
    idempotencyWindowMs: 60_000,
    ...options,
  });
  redis.keep(store);
  return store;
}

const post = publishRequest;

function collect(store: RedisStore): StoreEvent[] {
  const events: StoreEvent[] = [];
  store.onEvent((event) => events.push(event));
  return events;
}

/** Every key of a keyspace with its contents, as one string. */
async function dumpKeyspace(prefix: string): Promise<string> {
  const client = createClient({ url: redis.url });
  await client.connect();
  let text = '';
  for (const key of await client.keys(`${prefix}*`)) {
    text += key;
    const type = await client.type(key);
    if (type === 'string') text += await client.get(key);
    if (type === 'hash') text += JSON.stringify(await client.hGetAll(key));
    if (type === 'list') text += (await client.lRange(key, 0, -1)).join();
  }
  await client.close();
  return text;
}

describe('the seed', () => {
  it('is loaded once when three instances start at the same moment', async () => {
    const prefix = freshPrefix();
    const stores = await Promise.all([open({ prefix }), open({ prefix }), open({ prefix })]);
    for (const store of stores) {
      expect((await store.stats()).posts).toBe(DEMO_SEED.posts.length);
      const history = await store.recent('crypto-legal', 100);
      expect(new Set(history.map((p) => p.id)).size).toBe(history.length);
      expect(history.length).toBe(DEMO_SEED.posts.filter((p) => p.streamId === 'crypto-legal').length);
    }
  });

  it('of another service is refused, naming --reset-store; resetStore replaces it and its posts', async () => {
    const prefix = freshPrefix();
    const first = await open({ prefix });
    await first.publish(post({ text: 'old seed' }));
    const other = parseSeed({
      users: [{ id: 'u', name: 'U', readerKey: 'sp_other_reader_key', follows: ['s'] }],
      streams: [{ id: 's', name: 'S', owner: 'u', key: 'sp_other_stream_key' }],
    });
    const refused = open({ prefix, seed: other });
    await expect(refused).rejects.toMatchObject({ code: 'store-seed-mismatch' });
    await expect(refused).rejects.toThrow(/--reset-store/);
    const replaced = await open({ prefix, seed: other, resetStore: true });
    expect(await replaced.authenticate('sp_other_reader_key')).toEqual({ userId: 'u', kind: 'reader' });
    expect(await replaced.authenticate('sp_demo_reader_alice')).toBeUndefined();
    // The instance still on the old seed refuses to publish into the new one.
    await expect(first.publish(post())).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('keeps keys as SHA-256 digests: no raw key anywhere in Redis', async () => {
    const prefix = freshPrefix();
    const store = await open({ prefix });
    expect(await store.authenticate('sp_demo_stream_macro_wire')).toEqual({
      userId: expect.any(String),
      kind: 'stream',
      streamId: 'macro-wire',
    });
    const dump = await dumpKeyspace(prefix);
    const secrets = [...DEMO_SEED.users.map((u) => u.readerKey), ...DEMO_SEED.streams.map((s) => s.key)];
    expect(dump.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(dump).not.toContain(secret);
  });
});

describe('publishing', () => {
  it('an idempotency key makes one post across instances, however many send it at once', async () => {
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([open({ prefix }), open({ prefix })]);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).publish(post({ idempotencyKey: 'once', text: `try ${i}` })),
      ),
    );
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(new Set(results.map((r) => r.post.id)).size).toBe(1);
    expect((await a.stats()).idempotencyKeys).toBe(1);
  });

  it('a key lapses when the shared clock passes its window, moved through any instance', async () => {
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([open({ prefix }), open({ prefix })]);
    const first = await a.publish(post({ idempotencyKey: 'k' }));
    expect((await b.publish(post({ idempotencyKey: 'k' }))).duplicate).toBe(true);
    await b.advanceClock(60_000);
    const again = await a.publish(post({ idempotencyKey: 'k' }));
    expect(again.duplicate).toBe(false);
    expect(again.post.id).not.toBe(first.post.id);
  });

  it('caps pending releases per stream atomically across instances', async () => {
    const prefix = freshPrefix();
    const clock = new AdjustableClock();
    const caps = { maxPendingReleases: 5 };
    const [a, b] = await Promise.all([open({ prefix, ...caps }), open({ prefix, ...caps })]);
    const later = clock.now() + 3_600_000;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).publish(post({ releaseAt: later, text: `r${i}` }))),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    for (const o of outcomes.filter((o) => o.status === 'rejected')) {
      expect((o as PromiseRejectedResult).reason).toBeInstanceOf(ProtocolError);
      expect((o as PromiseRejectedResult).reason.code).toBe('limit-exceeded');
    }
    expect((await a.stats()).scheduledReleases).toBe(5);
  });

  it('history holds the last 100 posts per stream, a release updating the post in place', async () => {
    const prefix = freshPrefix();
    const store = await open({ prefix });
    const hidden = await store.publish(post({ releaseAt: Date.now() + 3_600_000, text: 'secret' }));
    for (let i = 0; i < 99; i += 1) await store.publish(post({ text: `p${i}` }));
    const events = collect(store);
    await store.advanceClock(3_600_000);
    expect(events.map((e) => [e.type, e.post.id])).toEqual([['released', hidden.post.id]]);
    const history = await store.recent('macro-wire', 100);
    expect(history).toHaveLength(100);
    expect(history[0]).toMatchObject({ id: hidden.post.id, hidden: false, text: 'secret' });
    await store.publish(post({ text: 'one more' }));
    const after = await store.recent('macro-wire', 100);
    expect(after[0]!.text).toBe('p0');
    expect(after.at(-1)!.text).toBe('one more');
  });

  it('publishes started a turn apart are stored in the order started, also when the script cache is flushed meanwhile', async () => {
    const store = await open({ prefix: freshPrefix() });
    const events = collect(store);
    const stored: string[] = [];
    for (const round of [1, 2, 3]) {
      // A Redis whose script cache was emptied by hand answers a script sent by its digest
      // with NOSCRIPT: no publish may overtake another on its way back.
      const admin = createClient({ url: redis.url });
      await admin.connect();
      await admin.scriptFlush();
      await admin.close();
      const texts = Array.from({ length: 50 }, (_, i) => `round ${round} post ${i}`);
      // Started a turn apart, as a connection's commands arrive: replies come back meanwhile.
      const started: Promise<PublishResult | ProtocolError>[] = [];
      for (const text of texts) {
        started.push(store.publish(post({ text })).catch((error: ProtocolError) => error));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const outcomes = await Promise.all(started);
      // Each is stored, or refused as unavailable (a retry succeeds) and not stored.
      const acked = outcomes.filter((outcome): outcome is PublishResult => !(outcome instanceof ProtocolError));
      for (const refused of outcomes.filter((outcome) => outcome instanceof ProtocolError))
        expect(refused).toMatchObject({ code: 'unavailable' });
      expect(acked.length).toBeGreaterThan(0);
      const ackedTexts = acked.map((result) => result.post.text);
      expect(texts.filter((text) => ackedTexts.includes(text))).toEqual(ackedTexts);
      const ids = acked.map((result) => result.post.id);
      expect([...ids].sort()).toEqual(ids);
      stored.push(...ackedTexts);
      expect((await store.recent('macro-wire', 100)).map((p) => p.text).slice(-ackedTexts.length)).toEqual(ackedTexts);
    }
    expect(events.filter((event) => event.type === 'created').map((event) => event.post.text)).toEqual(stored);
  });

  it('a key prefix keeps services on one Redis apart', async () => {
    const [a, b] = await Promise.all([open({ prefix: freshPrefix() }), open({ prefix: freshPrefix() })]);
    await a.publish(post({ text: 'only in a' }));
    expect((await a.recent('macro-wire', 1))[0]!.text).toBe('only in a');
    expect((await b.recent('macro-wire', 1))[0]!.text).not.toBe('only in a');
  });
});

describe('a Redis that stops answering (its connections still open)', () => {
  it('a publish waits for its word: readiness says unreachable meanwhile, and a refusal is never stored', async () => {
    const frozen = await RedisServer.start();
    try {
      const store = await RedisStore.open({
        url: frozen.url,
        prefix: freshPrefix(),
        seed: DEMO_SEED,
        clock: new AdjustableClock(),
        idempotencyWindowMs: 60_000,
      });
      redis.keep(store);
      frozen.pause();
      const outcome = store.publish(post({ text: 'while frozen' })).catch((failure: unknown) => failure);
      // No reply in time: unreachable, although its connections never dropped.
      await until(() => store.unusable()?.reason === 'unreachable', 'the store to be unreachable', 15_000);
      frozen.resume();
      const answer = await outcome;
      const texts = async () => (await store.recent('macro-wire', 100)).map((one) => one.text);
      // Run after its deadline, it is refused and stored nowhere; run just before, it is acked.
      if (answer instanceof ProtocolError) {
        expect(answer.code).toBe('unavailable');
        expect(await texts()).not.toContain('while frozen');
      } else expect((answer as PublishResult).duplicate).toBe(false);
      const after = await store.publish(post({ text: 'after' }));
      expect(after.duplicate).toBe(false);
      expect(store.unusable()).toBeUndefined();
      expect((await texts()).filter((text) => text === 'while frozen').length).toBe(
        answer instanceof ProtocolError ? 0 : 1,
      );
      expect(await texts()).toContain('after');
    } finally {
      frozen.resume();
      await frozen.stop();
    }
  }, 30_000);
});

describe('a Redis lost with a publish sent to it', () => {
  it('without a key the outcome is said to be unknown, never "nothing was stored"; with one it is sent again and answered', async () => {
    const doomed = await RedisServer.start();
    try {
      const store = await RedisStore.open({
        url: doomed.url,
        prefix: freshPrefix(),
        seed: DEMO_SEED,
        clock: new AdjustableClock(),
        idempotencyWindowMs: 60_000,
      });
      redis.keep(store);
      doomed.pause();
      const settle = (outcome: Promise<PublishResult>) => outcome.catch((failure: unknown) => failure);
      const unkeyed = settle(store.publish(post({ text: 'sent without a key' })));
      const keyed = settle(store.publish(post({ text: 'sent with a key', idempotencyKey: 'lost-reply-1' })));
      // Past the command deadline: both have long been written to Redis's socket.
      await until(() => store.unusable()?.reason === 'unreachable', 'the store to be unreachable', 15_000);
      await doomed.kill();
      const answer = await unkeyed;
      expect(answer).toBeInstanceOf(ProtocolError);
      expect((answer as ProtocolError).code).toBe('internal');
      expect((answer as ProtocolError).message).toContain('may have been stored');
      expect((answer as ProtocolError).message).toContain('same idempotency key');
      await doomed.restart();
      // The keyed one is sent again once Redis is back (it lost everything: stored now, once).
      expect(await keyed).toMatchObject({ duplicate: false, post: { text: 'sent with a key' } });
      const texts = (await store.recent('macro-wire', 100)).map((one) => one.text);
      expect(texts.filter((text) => text === 'sent with a key')).toEqual(['sent with a key']);
      expect(texts).not.toContain('sent without a key');
    } finally {
      await doomed.stop();
    }
  }, 40_000);
});

describe('a Redis out of memory (noeviction)', () => {
  it('refuses a release claim as a whole: the release fires once memory is back, not lost half-done', async () => {
    const full = await RedisServer.start();
    try {
      const clock = new AdjustableClock();
      const refusedClaims = new Arrivals();
      let claimsRefused = 0;
      const store = await RedisStore.open({
        url: full.url,
        prefix: freshPrefix(),
        seed: DEMO_SEED,
        clock,
        idempotencyWindowMs: 60_000,
        logger: {
          log: (_level, message) => {
            if (message === 'releases not run') claimsRefused += 1;
            refusedClaims.notify();
          },
        },
      });
      redis.keep(store);
      const events = collect(store);
      const hidden = await store.publish(post({ text: 'held', releaseAt: clock.now() + 60_000 }));
      const admin = createClient({ url: full.url });
      await admin.connect();
      await admin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '1' });
      // Due at once: the claim runs while Redis refuses writes.
      clock.advance(60_000);
      await refusedClaims.until(
        () => claimsRefused > 0,
        10_000,
        () => new Error('no release claim was refused'),
      );
      expect(store.unusable()).toMatchObject({ reason: 'out-of-memory' });
      await admin.configSet('maxmemory', '0');
      await admin.close();
      await refusedClaims.until(
        () => events.some((event) => event.type === 'released'),
        10_000,
        () => new Error('the release never fired'),
      );
      expect(events.filter((event) => event.type === 'released').map((event) => event.post.id)).toEqual([
        hidden.post.id,
      ]);
      const inHistory = (await store.recent('macro-wire', 100)).find((one) => one.id === hidden.post.id);
      expect(inHistory).toMatchObject({ hidden: false, text: 'held' });
      expect((await store.stats()).scheduledReleases).toBe(0);
    } finally {
      await full.stop();
    }
  });
});

describe('selected custom targets', () => {
  it('change the same user record on every instance, reach instances started later, and go back to the seed on reset', async () => {
    const prefix = freshPrefix();
    const [a, b] = [await open({ prefix }), await open({ prefix })];
    const aliceOnB = (await b.user('alice'))!;
    await a.setCustomTargets('alice', 'whale-alerts', ['SOL']);
    await b.caughtUp();
    // Subscriptions hold this record: it must be the one that changed, not a new one.
    expect(await b.user('alice')).toBe(aliceOnB);
    expect([...aliceOnB.customTargets.get('whale-alerts')!]).toEqual(['SOL']);
    const later = await open({ prefix });
    expect([...(await later.user('alice'))!.customTargets.get('whale-alerts')!]).toEqual(['SOL']);
    await a.reset();
    await Promise.all([b.caughtUp(), later.caughtUp()]);
    for (const store of [a, b, later]) {
      expect([...(await store.user('alice'))!.customTargets.get('whale-alerts')!]).toEqual(['BTC', 'ETH']);
    }
    await a.setCustomTargets('bob', 'whale-alerts', []);
    const replaced = await open({ prefix, resetStore: true });
    expect([...(await replaced.user('bob'))!.customTargets.get('whale-alerts')!]).toEqual(['SOL']);
  });
});

describe('post metadata', () => {
  it('is stored with the post, kept through its release, and read back as given', async () => {
    const clock = new AdjustableClock();
    const store = await open({ prefix: freshPrefix(), clock });
    const events = collect(store);
    const metadata = { headline: 'Held "quoted" \\ text', media: [{ type: 'image/png', url: 'http://x/y' }], n: 1.5 };
    const { post: held } = await store.publish(post({ metadata, releaseAt: clock.now() + 1_000 }));
    expect(held).toMatchObject({ metadata, hidden: true });
    await store.advanceClock(1_000);
    const released = events.find((event) => event.type === 'released')!;
    expect(released.post).toMatchObject({ id: held.id, metadata, hidden: false });
    expect((await store.recent('macro-wire', 1))[0]).toMatchObject({ metadata, hidden: false });
  });
});
