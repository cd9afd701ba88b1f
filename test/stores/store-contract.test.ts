import { describe, expect, it } from 'vitest';
import { MAX_CONTENT_BYTES, MAX_LAST_POSTS } from '../../src/protocol/limits.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import type { AdjustableClock } from '../../src/server/clock.js';
import { MemoryStore } from '../../src/server/stores/memory/memory-store.js';
import { RedisStore } from '../../src/server/stores/redis/redis-store.js';
import { holdingsError, type HoldingsCaps } from '../../src/server/stores/holding-rules.js';
import type { PublishRequest, Store, StoreEvent } from '../../src/server/stores/store.js';
import { publishRequest, redisForFile, StillClock } from '../support/stores.js';

/**
 * The contract every store keeps, run against each store directly: whatever a memory store
 * answers, a Redis store answers alike. A case that holds for one store only belongs in
 * that store's own file.
 */
interface StoreOptions extends HoldingsCaps {
  idempotencyWindowMs?: number;
}

interface Opened {
  store: Store;
  clock: AdjustableClock;
}

const redis = redisForFile();

const STORES: Record<string, (options: StoreOptions) => Promise<Opened>> = {
  memory: async (options) => {
    const clock = new StillClock();
    const store = new MemoryStore({ seed: DEMO_SEED, clock, idempotencyWindowMs: 60_000, ...options });
    return { store: redis.keep(store), clock };
  },
  redis: async (options) => {
    const clock = new StillClock();
    const store = await RedisStore.open({
      url: redis.url,
      prefix: redis.prefix(),
      seed: DEMO_SEED,
      clock,
      idempotencyWindowMs: 60_000,
      ...options,
    });
    return { store: redis.keep(store), clock };
  },
};

const STREAM = 'macro-wire';

const post = publishRequest;

/** The next event of a kind the store sends to its listeners. */
function nextEvent(store: Store, type: StoreEvent['type']): Promise<StoreEvent> {
  return new Promise((resolve) => {
    const stop = store.onEvent((event) => {
      if (event.type !== type) return;
      stop();
      resolve(event);
    });
  });
}

describe.each(Object.keys(STORES))('the %s store', (name) => {
  const open = STORES[name]!;

  describe('idempotency', () => {
    it('answers a repeated key within the window with the first post, marked duplicate', async () => {
      const { store } = await open({});
      const first = await store.publish(post({ idempotencyKey: 'k1', text: 'one' }));
      const again = await store.publish(post({ idempotencyKey: 'k1', text: 'two' }));
      expect(first.duplicate).toBe(false);
      expect(again).toEqual({ post: first.post, duplicate: true });
      const other = await store.publish(post({ idempotencyKey: 'k1', streamId: 'crypto-legal' }));
      expect(other.duplicate).toBe(false);
    });

    it('takes a repeated key as a new post once the window has passed', async () => {
      // The clock runs on from the wall clock as well: half a window on, it is still within it.
      const { store, clock } = await open({ idempotencyWindowMs: 60_000 });
      const first = await store.publish(post({ idempotencyKey: 'k1' }));
      clock.advance(30_000);
      expect((await store.publish(post({ idempotencyKey: 'k1' }))).duplicate).toBe(true);
      clock.advance(30_000);
      const later = await store.publish(post({ idempotencyKey: 'k1' }));
      expect(later.duplicate).toBe(false);
      expect(later.post.id).not.toBe(first.post.id);
    });

    it('deduplicates nothing with a window of 0: a key lapses as its post is stored', async () => {
      const { store } = await open({ idempotencyWindowMs: 0, maxIdempotencyKeys: 1 });
      const first = await store.publish(post({ idempotencyKey: 'k1' }));
      const again = await store.publish(post({ idempotencyKey: 'k1' }));
      expect(again.duplicate).toBe(false);
      expect(again.post.id).not.toBe(first.post.id);
      // Nor does a lapsed key count against the key cap.
      expect((await store.publish(post({ idempotencyKey: 'k2' }))).duplicate).toBe(false);
      expect((await store.stats()).posts).toBe(DEMO_SEED.posts.length + 3);
    });

    it('holds no key with a window of 0: a keyed post counts against neither key cap', async () => {
      const { store } = await open({
        idempotencyWindowMs: 0,
        maxIdempotencyKeys: 1,
        maxIdempotencyBytes: 2,
      });
      expect((await store.publish(post({ idempotencyKey: 'k1', text: 'longer than two bytes' }))).duplicate).toBe(
        false,
      );
      expect((await store.publish(post({ idempotencyKey: 'k2', text: 'and again' }))).duplicate).toBe(false);
      expect((await store.stats()).idempotencyKeys).toBe(0);
    });

    it('lets a key lapse exactly at the end of its window', async () => {
      const { store, clock } = await open({ idempotencyWindowMs: 1000 });
      await store.publish(post({ idempotencyKey: 'k1' }));
      clock.advance(999);
      expect((await store.publish(post({ idempotencyKey: 'k1' }))).duplicate).toBe(true);
      clock.advance(1);
      expect((await store.publish(post({ idempotencyKey: 'k1' }))).duplicate).toBe(false);
    });
  });

  describe('caps', () => {
    async function refused(store: Store, request: PublishRequest): Promise<void> {
      const before = await store.stats();
      await expect(store.publish(request)).rejects.toMatchObject({ code: 'limit-exceeded' });
      expect(await store.stats()).toEqual(before);
    }

    it('refuses a pending release past the count cap, and takes one again after a release', async () => {
      const { store, clock } = await open({ maxPendingReleases: 2 });
      const releaseAt = clock.now() + 5000;
      await store.publish(post({ releaseAt }));
      await store.publish(post({ releaseAt }));
      await refused(store, post({ releaseAt }));
      // The cap is per stream, and public posts are not held.
      await store.publish(post({ releaseAt, streamId: 'crypto-legal' }));
      await store.publish(post());
      const released = nextEvent(store, 'released');
      clock.advance(5000);
      await released;
      await store.publish(post({ releaseAt: clock.now() + 5000 }));
    });

    it('refuses a pending release past the byte cap', async () => {
      const { store, clock } = await open({ maxPendingReleaseBytes: 10 });
      const releaseAt = clock.now() + 5000;
      await store.publish(post({ releaseAt, text: 'é'.repeat(3) }));
      await refused(store, post({ releaseAt, text: 'abcde' }));
      await store.publish(post({ releaseAt, text: 'abcd' }));
    });

    it('refuses a new idempotency key past the count cap, but answers a held one', async () => {
      const { store, clock } = await open({ idempotencyWindowMs: 60_000, maxIdempotencyKeys: 2 });
      await store.publish(post({ idempotencyKey: 'k1' }));
      await store.publish(post({ idempotencyKey: 'k2' }));
      await refused(store, post({ idempotencyKey: 'k3' }));
      expect((await store.publish(post({ idempotencyKey: 'k1' }))).duplicate).toBe(true);
      await store.publish(post());
      clock.advance(60_000);
      expect((await store.publish(post({ idempotencyKey: 'k3' }))).duplicate).toBe(false);
    });

    it('refuses a new idempotency key past the byte cap', async () => {
      const { store } = await open({ maxIdempotencyBytes: 8 });
      await store.publish(post({ idempotencyKey: 'k1', text: 'abcd' }));
      await refused(store, post({ idempotencyKey: 'k2', text: 'abcde' }));
      await store.publish(post({ idempotencyKey: 'k2', text: 'abcd' }));
    });

    it('checks the caps in one order, each refusal worded alike: releases, their bytes, keys, their bytes', async () => {
      const caps = {
        idempotencyWindowMs: 60_000,
        maxPendingReleases: 1,
        maxPendingReleaseBytes: 4,
        maxIdempotencyKeys: 1,
        maxIdempotencyBytes: 4,
      };
      const { store, clock } = await open(caps);
      const releaseAt = clock.now() + 5000;
      await store.publish(post({ releaseAt, idempotencyKey: 'k1', text: 'abcd' }));
      // Past every cap at once: the first in order is the one named.
      await expect(store.publish(post({ releaseAt, idempotencyKey: 'k2', text: 'abcde' }))).rejects.toMatchObject(
        holdingsError('releases', STREAM, 1),
      );
      const second = await open(caps);
      await expect(
        second.store.publish(post({ releaseAt: second.clock.now() + 5000, idempotencyKey: 'k2', text: 'abcde' })),
      ).rejects.toMatchObject(holdingsError('releases-bytes', STREAM, 4));
      // A public keyed post is held by its key only.
      await expect(store.publish(post({ idempotencyKey: 'k2' }))).rejects.toMatchObject(
        holdingsError('keys', STREAM, 1),
      );
      await expect(second.store.publish(post({ idempotencyKey: 'k2', text: 'abcde' }))).rejects.toMatchObject(
        holdingsError('keys-bytes', STREAM, 4),
      );
    });

    it('takes any number with every cap 0 (no cap)', async () => {
      const { store, clock } = await open({
        maxPendingReleases: 0,
        maxPendingReleaseBytes: 0,
        maxIdempotencyKeys: 0,
        maxIdempotencyBytes: 0,
      });
      const releaseAt = clock.now() + 5000;
      for (let i = 0; i < 5; i += 1)
        await store.publish(post({ releaseAt, idempotencyKey: `k${i}`, text: 'x'.repeat(1000) }));
      expect(await store.stats()).toMatchObject({ scheduledReleases: 5, idempotencyKeys: 5 });
    });

    it('counts a post of the largest size allowed in UTF-8 bytes, and keeps it whole', async () => {
      const text = 'é'.repeat(MAX_CONTENT_BYTES / 2);
      const { store, clock } = await open({ maxPendingReleaseBytes: MAX_CONTENT_BYTES * 2 - 1 });
      const releaseAt = clock.now() + 5000;
      const { post: stored } = await store.publish(post({ releaseAt, text, metadata: { tag: 'ü' } }));
      expect((await store.recent(STREAM, 1))[0]).toEqual(stored);
      expect(stored).toMatchObject({ text, metadata: { tag: 'ü' } });
      // Two of them are one byte past the cap.
      await expect(store.publish(post({ releaseAt, text }))).rejects.toMatchObject(
        holdingsError('releases-bytes', STREAM, MAX_CONTENT_BYTES * 2 - 1),
      );
    });

    it(`keeps the last ${MAX_LAST_POSTS} posts of a stream, oldest first`, async () => {
      const { store } = await open({});
      const ids: string[] = [];
      for (let i = 0; i < MAX_LAST_POSTS + 5; i += 1) ids.push((await store.publish(post({ text: `p${i}` }))).post.id);
      const history = await store.recent(STREAM, MAX_LAST_POSTS);
      expect(history.map((record) => record.id)).toEqual(ids.slice(5));
      expect((await store.recent(STREAM, 3)).map((record) => record.id)).toEqual(ids.slice(-3));
    });
  });

  describe('visibility', () => {
    it('holds a post hidden until its releaseAt, then releases it to listeners and history', async () => {
      const { store, clock } = await open({});
      const created = nextEvent(store, 'created');
      const releaseAt = clock.now() + 5000;
      const { post: stored } = await store.publish(post({ releaseAt, text: 'later' }));
      expect(stored).toMatchObject({ hidden: true, releaseAt, text: 'later' });
      expect((await created).post).toMatchObject({ id: stored.id, hidden: true });
      expect((await store.recent(STREAM, 1))[0]).toMatchObject({ id: stored.id, hidden: true });
      expect((await store.stats()).scheduledReleases).toBe(1);

      const released = nextEvent(store, 'released');
      clock.advance(5000);
      expect((await released).post).toMatchObject({ id: stored.id, hidden: false, text: 'later' });
      expect((await store.recent(STREAM, 1))[0]).toMatchObject({ id: stored.id, hidden: false });
      expect((await store.stats()).scheduledReleases).toBe(0);
    });

    it('keeps a hidden post in the history beside public ones, marked hidden', async () => {
      const { store, clock } = await open({});
      const { post: shown } = await store.publish(post({ text: 'now' }));
      const { post: hidden } = await store.publish(post({ releaseAt: clock.now() + 5000, text: 'later' }));
      const history = await store.recent(STREAM, 2);
      expect(history.map((record) => [record.id, record.hidden])).toEqual([
        [shown.id, false],
        [hidden.id, true],
      ]);
      expect(await store.stats()).toMatchObject({ scheduledReleases: 1 });
    });

    it('stores a post whose releaseAt has come as public at once', async () => {
      const { store, clock } = await open({});
      const { post: stored } = await store.publish(post({ releaseAt: clock.now() }));
      expect(stored.hidden).toBe(false);
      expect((await store.stats()).scheduledReleases).toBe(0);
    });

    it('answers a duplicate of a hidden post as it is now: released since', async () => {
      const { store, clock } = await open({});
      const releaseAt = clock.now() + 5000;
      const first = await store.publish(post({ releaseAt, idempotencyKey: 'k1' }));
      expect((await store.publish(post({ releaseAt, idempotencyKey: 'k1' }))).post.hidden).toBe(true);
      const released = nextEvent(store, 'released');
      clock.advance(5000);
      await released;
      const again = await store.publish(post({ releaseAt, idempotencyKey: 'k1' }));
      expect(again).toMatchObject({ duplicate: true, post: { id: first.post.id, hidden: false } });
    });
  });
});
