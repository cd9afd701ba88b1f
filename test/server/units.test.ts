import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdjustableClock } from '../../src/server/clock.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { MemoryStore } from '../../src/server/stores/memory/memory-store.js';
import { MinHeap } from '../../src/server/stores/memory/min-heap.js';
import { TokenBucket } from '../../src/server/ws/rate-limiter.js';
import { ReleaseScheduler } from '../../src/server/stores/memory/release-scheduler.js';
import { RingBuffer } from '../../src/server/stores/memory/ring-buffer.js';
import type { Identity, StoreEvent } from '../../src/server/stores/store.js';
import { requestTarget } from '../../src/server/http-util.js';
import { ReleaseClaims } from '../../src/server/stores/redis/release-claims.js';
import { watchWarnings } from '../support/warnings.js';
import { publishRequest } from '../support/stores.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const WINDOW_MS = 10 * 60_000;

/** mulberry32: a small deterministic generator, so failures reproduce. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const closers: (() => unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) await close();
});

describe('RingBuffer', () => {
  it.each([
    [1, [1, 2, 3], [3]],
    [3, [], []],
    [3, [1, 2], [1, 2]],
    [3, [1, 2, 3], [1, 2, 3]],
    [3, [1, 2, 3, 4], [2, 3, 4]],
    [3, [1, 2, 3, 4, 5, 6, 7], [5, 6, 7]],
    [4, Array.from({ length: 10 }, (_, i) => i), [6, 7, 8, 9]],
  ])('capacity %d after pushing %j holds %j oldest first', (capacity, pushed, expected) => {
    const ring = new RingBuffer<number>(capacity);
    for (const item of pushed) ring.push(item);
    expect(ring.toArray()).toEqual(expected);
    expect(ring.length).toBe(expected.length);
    expect(ring.capacity).toBe(capacity);
  });

  it('starts over after clear', () => {
    const ring = new RingBuffer<string>(2);
    for (const item of ['a', 'b', 'c']) ring.push(item);
    ring.clear();
    expect(ring.toArray()).toEqual([]);
    ring.push('d');
    expect(ring.toArray()).toEqual(['d']);
  });

  it.each([[0], [-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY]])('capacity %d → RangeError', (capacity) => {
    expect(() => new RingBuffer(capacity)).toThrow(RangeError);
  });
});

describe('MinHeap', () => {
  it.each([[1], [7], [42], [2024]])('pops random pushes in order (seed %d)', (seed) => {
    const random = seededRandom(seed);
    const heap = new MinHeap<number>((a, b) => a < b);
    const values = Array.from({ length: 500 }, () => Math.floor(random() * 100));
    for (const value of values) heap.push(value);
    expect(heap.size).toBe(values.length);
    expect(heap.peek()).toBe(Math.min(...values));
    const popped: number[] = [];
    for (let value = heap.pop(); value !== undefined; value = heap.pop()) popped.push(value);
    expect(popped).toEqual([...values].sort((a, b) => a - b));
    expect(heap.size).toBe(0);
  });

  it('interleaves pushes and pops', () => {
    const heap = new MinHeap<number>((a, b) => a < b);
    for (const value of [5, 3, 8]) heap.push(value);
    expect(heap.pop()).toBe(3);
    heap.push(1);
    heap.push(9);
    expect([heap.pop(), heap.pop(), heap.pop(), heap.pop(), heap.pop()]).toEqual([1, 5, 8, 9, undefined]);
  });
});

describe('ReleaseScheduler', () => {
  function setup() {
    const clock = new AdjustableClock();
    const fired: string[] = [];
    const scheduler = new ReleaseScheduler(clock, (id) => fired.push(id));
    closers.push(() => scheduler.close());
    return { clock, fired, scheduler, start: clock.now() };
  }

  it('fires due releases in release-time order, ties in scheduling order', () => {
    const { clock, fired, scheduler, start } = setup();
    const plan: [string, number][] = [
      ['a', 1000],
      ['b', 500],
      ['c', 1000],
      ['d', 500],
      ['e', 5000],
      ['f', 200],
    ];
    for (const [id, delay] of plan) scheduler.schedule(id, start + delay);
    expect(scheduler.size).toBe(6);
    clock.advance(700);
    expect(fired).toEqual(['f', 'b', 'd']);
    clock.advance(1000);
    expect(fired).toEqual(['f', 'b', 'd', 'a', 'c']);
    expect(scheduler.size).toBe(1);
    clock.advance(4000);
    expect(fired).toEqual(['f', 'b', 'd', 'a', 'c', 'e']);
    expect(scheduler.size).toBe(0);
  });

  it('orders many random releases with ties', () => {
    const { clock, fired, scheduler, start } = setup();
    const random = seededRandom(99);
    const plan = Array.from({ length: 300 }, (_, i) => ({
      id: `p${i}`,
      at: start + 1000 + Math.floor(random() * 50) * 10,
    }));
    for (const { id, at } of plan) scheduler.schedule(id, at);
    clock.advance(10_000);
    const expected = plan.map((entry, seq) => ({ ...entry, seq })).sort((a, b) => a.at - b.at || a.seq - b.seq);
    expect(fired).toEqual(expected.map((entry) => entry.id));
  });

  it('does not fire a release 40 days ahead early, and fires it once past', () => {
    const { clock, fired, scheduler, start } = setup();
    scheduler.schedule('far', start + 40 * DAY_MS);
    scheduler.schedule('near', start + 1000);
    clock.advance(25 * DAY_MS);
    expect(fired).toEqual(['near']);
    clock.advance(15 * DAY_MS - 60_000);
    expect(fired).toEqual(['near']);
    clock.advance(61_000);
    expect(fired).toEqual(['near', 'far']);
  });

  it('on a clock moved by hand: nothing at releaseAt − 1 ms, the release at releaseAt', () => {
    // Date stands still: the clock moves only when advanced, so a millisecond is a millisecond.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { clock, fired, scheduler, start } = setup();
    scheduler.schedule('on-time', start + 60_000);
    clock.advance(59_999);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual(['on-time']);
  });

  it('through its own timer: nothing at releaseAt − 1 ms, the release at releaseAt', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { fired, scheduler, start } = setup();
    scheduler.schedule('on-time', start + 1000);
    scheduler.schedule('later', start + 1500);
    vi.advanceTimersByTime(999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['on-time']);
    vi.advanceTimersByTime(499);
    expect(fired).toEqual(['on-time']);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['on-time', 'later']);
  });

  it('never arms a timer past 2^31−1 ms, which Node would fire at once with a TimeoutOverflowWarning', async () => {
    const warnings = watchWarnings('TimeoutOverflowWarning');
    closers.push(warnings.stop);
    const { fired, scheduler, start } = setup();
    for (const days of [25, 40, 90, 400]) scheduler.schedule(`in ${days} days`, start + days * DAY_MS);
    // The warning is emitted on the next tick; a timer that fired at once would have run by the next turn.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.seen).toEqual([]);
    expect(fired).toEqual([]);
  });

  it('reaches a release 40 days ahead through its own timer, across the 24.8-day limit', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { fired, scheduler, start } = setup();
    scheduler.schedule('far', start + 40 * DAY_MS);
    // The first timer waits as long as one can: a longer delay would be taken as 1 ms, and
    // the release would be looked at every millisecond for 40 days.
    vi.advanceTimersToNextTimer();
    expect(Date.now() - start).toBe(2 ** 31 - 1);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1001);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(40 * DAY_MS - 2 ** 31 - 2000);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(2000);
    expect(fired).toEqual(['far']);
  });

  it('clear() drops every pending release', () => {
    const { clock, fired, scheduler, start } = setup();
    scheduler.schedule('a', start + 100);
    scheduler.schedule('b', start + 200);
    scheduler.clear();
    expect(scheduler.size).toBe(0);
    clock.advance(1000);
    expect(fired).toEqual([]);
    scheduler.schedule('c', clock.now() + 100);
    clock.advance(200);
    expect(fired).toEqual(['c']);
  });
});

describe('TokenBucket', () => {
  function bucket(rate: number, burst: number) {
    const time = { now: 1_000_000 };
    return { time, bucket: new TokenBucket(rate, burst, { now: () => time.now }) };
  }
  const takeMany = (b: TokenBucket, n: number) => Array.from({ length: n }, () => b.tryTake());

  it('allows a burst, then refuses, then refills at the rate', () => {
    const { time, bucket: b } = bucket(10, 3);
    expect(takeMany(b, 4)).toEqual([true, true, true, false]);
    time.now += 99;
    expect(b.tryTake()).toBe(false);
    time.now += 1;
    expect(takeMany(b, 2)).toEqual([true, false]);
    time.now += 250;
    expect(takeMany(b, 3)).toEqual([true, true, false]);
  });

  it('never holds more than the burst', () => {
    const { time, bucket: b } = bucket(100, 5);
    time.now += 3_600_000;
    expect(takeMany(b, 6)).toEqual([true, true, true, true, true, false]);
  });

  it('does not mint tokens when time goes backwards', () => {
    const { time, bucket: b } = bucket(10, 1);
    expect(b.tryTake()).toBe(true);
    time.now -= 10_000;
    expect(b.tryTake()).toBe(false);
  });

  it.each([
    [0, 1],
    [-5, 1],
    [Number.NaN, 1],
    [10, 0],
    [10, 0.5],
    [10, Number.NaN],
  ])('rate %d, burst %d → RangeError', (rate, burst) => {
    expect(() => new TokenBucket(rate, burst, { now: () => 0 })).toThrow(RangeError);
  });
});

describe('MemoryStore with DEMO_SEED', () => {
  function setup() {
    const clock = new AdjustableClock();
    const store = new MemoryStore({ seed: DEMO_SEED, clock, idempotencyWindowMs: WINDOW_MS });
    closers.push(() => store.close());
    const events: { type: StoreEvent['type']; id: string; hidden: boolean }[] = [];
    store.onEvent(({ type, post }) => events.push({ type, id: post.id, hidden: post.hidden }));
    return { clock, store, events };
  }
  const request = publishRequest;

  it.each<[string, Identity]>([
    ...DEMO_SEED.users.map((user): [string, Identity] => [user.readerKey, { userId: user.id, kind: 'reader' }]),
    ...DEMO_SEED.streams.map((stream): [string, Identity] => [
      stream.key,
      { userId: stream.owner, kind: 'stream', streamId: stream.id },
    ]),
  ])('authenticates %s', async (key, identity) => {
    expect(await setup().store.authenticate(key)).toEqual(identity);
  });

  it.each([[''], ['sp_demo_reader_alicE'], ['sp_demo_reader_alice '], ['sp_demo_stream_unknown']])(
    'refuses key %j',
    async (key) => {
      expect(await setup().store.authenticate(key)).toBeUndefined();
    },
  );

  it('deduplicates by idempotency key per stream within the window', async () => {
    const { clock, store } = setup();
    const first = await store.publish(request({ idempotencyKey: 'k1' }));
    expect(first.duplicate).toBe(false);
    clock.advance(WINDOW_MS - 1000);
    const repeat = await store.publish(request({ idempotencyKey: 'k1', text: 'changed' }));
    expect(repeat).toEqual({ post: first.post, duplicate: true });
    const otherStream = await store.publish(request({ streamId: 'crypto-legal', idempotencyKey: 'k1' }));
    expect(otherStream.duplicate).toBe(false);
    expect(otherStream.post.id).not.toBe(first.post.id);
    const posts = await store.recent('macro-wire', 100);
    expect(posts.filter((post) => post.id === first.post.id)).toHaveLength(1);
    expect(posts.map((post) => post.text)).not.toContain('changed');
  });

  it('publishes anew once the window has passed', async () => {
    const { clock, store } = setup();
    const first = await store.publish(request({ idempotencyKey: 'k2' }));
    clock.advance(WINDOW_MS + 1);
    const later = await store.publish(request({ idempotencyKey: 'k2' }));
    expect(later.duplicate).toBe(false);
    expect(later.post.id).not.toBe(first.post.id);
    expect(await store.publish(request({ idempotencyKey: 'k2' }))).toEqual({ post: later.post, duplicate: true });
  });

  it('emits created hidden, then released when the clock passes releaseAt', async () => {
    const { clock, store, events } = setup();
    const { post } = await store.publish(request({ releaseAt: clock.now() + 60_000, text: 'secret' }));
    expect(post.hidden).toBe(true);
    expect(events).toEqual([{ type: 'created', id: post.id, hidden: true }]);
    expect((await store.stats()).scheduledReleases).toBe(1);
    clock.advance(59_000);
    expect(events).toHaveLength(1);
    clock.advance(2000);
    expect(events).toEqual([
      { type: 'created', id: post.id, hidden: true },
      { type: 'released', id: post.id, hidden: false },
    ]);
    expect((await store.recent('macro-wire', 1))[0]).toMatchObject({ id: post.id, hidden: false, text: 'secret' });
  });

  it('does not hide a post whose releaseAt is past', async () => {
    const { clock, store, events } = setup();
    const { post } = await store.publish(request({ releaseAt: clock.now() - 1000 }));
    expect(post.hidden).toBe(false);
    expect((await store.stats()).scheduledReleases).toBe(0);
    expect(events.map((event) => event.type)).toEqual(['created']);
  });

  it('recent() is oldest first and bounded to 100 per stream', async () => {
    const { store } = setup();
    expect((await store.recent('crypto-legal', 100)).map((post) => post.text)).toEqual(
      DEMO_SEED.posts.filter((post) => post.streamId === 'crypto-legal').map((post) => post.content),
    );
    for (let i = 0; i < 105; i += 1) await store.publish(request({ text: `post ${i}` }));
    const all = await store.recent('macro-wire', 1000);
    expect(all).toHaveLength(100);
    expect(all[0]?.text).toBe('post 5');
    expect(all[99]?.text).toBe('post 104');
    expect(all.map((post) => post.id)).toEqual(all.map((post) => post.id).sort());
    expect((await store.recent('macro-wire', 3)).map((post) => post.text)).toEqual([
      'post 102',
      'post 103',
      'post 104',
    ]);
    expect(await store.recent('macro-wire', 0)).toEqual([]);
    expect(await store.recent('no-such-stream', 5)).toEqual([]);
  });

  it('reset() restores the seed and drops posts, keys and releases', async () => {
    const { clock, store, events } = setup();
    const seeded = await store.recent('macro-wire', 100);
    const stats = await store.stats();
    expect(stats).toEqual({ posts: DEMO_SEED.posts.length, scheduledReleases: 0, idempotencyKeys: 0 });
    const before = await store.publish(request({ idempotencyKey: 'k3' }));
    await store.publish(request({ releaseAt: clock.now() + 60_000 }));
    await store.reset();
    expect(await store.stats()).toEqual(stats);
    const restored = await store.recent('macro-wire', 100);
    expect(restored.map((post) => [post.text, post.contentType])).toEqual(
      seeded.map((post) => [post.text, post.contentType]),
    );
    expect(await store.authenticate('sp_demo_reader_bob')).toEqual({ userId: 'bob', kind: 'reader' });
    const after = await store.publish(request({ idempotencyKey: 'k3' }));
    expect(after.duplicate).toBe(false);
    expect(after.post.id).not.toBe(before.post.id);
    clock.advance(120_000);
    expect(events.filter((event) => event.type === 'released')).toEqual([]);
  });
});

describe('requestTarget', () => {
  // The upgrade path reads a request's address without the URL parser when it is plain; it
  // must read every address exactly as the parser does.
  const targets = [
    '/v1/ws',
    '/v1/ws/',
    '/v1/ws?hello=1',
    '/v1/ws/on-stream-post?apiKey=k&streamIds=a,b&lastPosts=3',
    '/v1/ws/on-stream-post-tree?apiKey=a%20b&x=1&x=2',
    '/graphql?format=tree&apiKey=',
    '/',
    '/v1//ws',
    '//evil.example/v1/ws',
    '/v1/./ws',
    '/v1/x/../ws?hello=1',
    '/v1/%77s',
    '/v1/ws#frag',
    '/v1/ws?apiKey=k#frag',
    'http://other.example/v1/ws?hello=1',
    '/v1/ws?a=%ZZ&b=+c',
    '*',
  ];
  it.each(targets)('reads %s as the URL parser does', (target) => {
    const parsed = new URL(target, 'http://localhost');
    const read = requestTarget(target);
    expect(read.pathname).toBe(parsed.pathname);
    expect([...read.searchParams]).toEqual([...parsed.searchParams]);
  });
});

describe('ReleaseClaims', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Claims counted against a clock that fake timers move; the fallback is 5 s. */
  function claims() {
    vi.useFakeTimers({ now: 0 });
    let count = 0;
    const clock = { now: () => Date.now(), onAdvance: () => () => {} };
    const tracker = new ReleaseClaims(clock, () => (count += 1), 5_000);
    return { tracker, claimed: () => count };
  }

  it('the publishing instance claims at the release time, another only the fallback later', () => {
    const { tracker, claimed } = claims();
    tracker.published('a');
    tracker.scheduled(2_000, 'a');
    vi.advanceTimersByTime(1_999);
    expect(claimed()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(claimed()).toBe(1);

    const other = claims();
    other.tracker.scheduled(2_000, 'b');
    vi.advanceTimersByTime(6_999);
    expect(other.claimed()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(other.claimed()).toBe(1);
  });

  it('follows the earliest release in Redis order (time, then id), as claims and the feed report it', () => {
    const { tracker, claimed } = claims();
    tracker.published('a');
    tracker.published('c');
    tracker.scheduled(2_000, 'c');
    tracker.scheduled(2_000, 'a');
    tracker.scheduled(2_000, 'b');
    tracker.scheduled(3_000, 'd');
    vi.advanceTimersByTime(2_000);
    expect(claimed()).toBe(1);
    // What the claim left: 'c' (ours) at 3 s.
    tracker.next([3_000, 'c']);
    vi.advanceTimersByTime(1_000);
    expect(claimed()).toBe(2);
    tracker.next(null);
    vi.advanceTimersByTime(60_000);
    expect(claimed()).toBe(2);
  });

  it('leaves what a clock advance made due to the instance that advanced it', () => {
    const { tracker, claimed } = claims();
    tracker.published('a');
    tracker.scheduled(2_000, 'a');
    vi.setSystemTime(2_500);
    tracker.advancedElsewhere();
    vi.advanceTimersByTime(4_999);
    expect(claimed()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(claimed()).toBe(1);
  });

  it('sets no timer while a claim runs, and after a failed claim tries again later, not at once', () => {
    const { tracker, claimed } = claims();
    tracker.published('a');
    tracker.claimStarted();
    tracker.scheduled(0, 'a');
    vi.advanceTimersByTime(100);
    expect(claimed()).toBe(0);
    tracker.claimEnded(1_000);
    vi.advanceTimersByTime(999);
    expect(claimed()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(claimed()).toBe(1);
    tracker.claimStarted();
    tracker.claimEnded();
    vi.advanceTimersByTime(0);
    expect(claimed()).toBe(2);
    tracker.close();
    tracker.scheduled(-1, 'z');
    vi.advanceTimersByTime(60_000);
    expect(claimed()).toBe(2);
  });
});
