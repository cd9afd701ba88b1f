import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { Clock } from './clock.js';
import { ReleaseScheduler } from './release-scheduler.js';
import { RingBuffer } from './ring-buffer.js';
import type { Seed } from './seed.js';
import type {
  Identity,
  PostRecord,
  PublishRequest,
  PublishResult,
  Store,
  StoreEvent,
  StoreStats,
  StreamRecord,
  UserRecord,
} from './store.js';

export interface MemoryStoreOptions {
  seed: Seed;
  clock: Clock;
  idempotencyWindowMs: number;
}

interface KeyEntry {
  digest: Buffer;
  identity: Identity;
}

interface IdempotencyEntry {
  post: PostRecord;
  expiresAt: number;
}

const SEED_POST_SPACING_MS = 60_000;

// ulid's default PRNG makes a WebCrypto call per character (16 per id); one
// CSPRNG refill per 4 KiB keeps the ids as random for a fraction of the cost.
const randomPool = new Uint8Array(4096);
let randomAt = randomPool.length;
function pooledRandom(): number {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  return randomPool[randomAt++]! / 256;
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** The in-memory store: all state in this process, gone when it exits. */
export class MemoryStore implements Store {
  readonly #seed: Seed;
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #keys = new Map<string, KeyEntry>();
  readonly #users = new Map<string, UserRecord>();
  readonly #streams = new Map<string, StreamRecord>();
  readonly #history = new Map<string, RingBuffer<PostRecord>>();
  readonly #streamsOf = new Map<string, StreamRecord[]>();
  readonly #hiddenById = new Map<string, PostRecord>();
  // Insertion order is expiry order (one window, a clock that only moves
  // forward), so expired entries are always at the front.
  readonly #idempotency = new Map<string, IdempotencyEntry>();
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #scheduler: ReleaseScheduler;
  // Kept across reset so no id is ever issued twice by one process.
  readonly #nextId = monotonicFactory(pooledRandom);
  #postCount = 0;

  constructor(options: MemoryStoreOptions) {
    if (!Number.isFinite(options.idempotencyWindowMs) || options.idempotencyWindowMs < 0) {
      throw new RangeError(`idempotencyWindowMs must be a non-negative number, got ${options.idempotencyWindowMs}`);
    }
    this.#seed = options.seed;
    this.#clock = options.clock;
    this.#windowMs = options.idempotencyWindowMs;
    this.#scheduler = new ReleaseScheduler(options.clock, (id) => this.#release(id));
    this.#load();
  }

  #load(): void {
    const seed = this.#seed;
    for (const user of seed.users) {
      this.#users.set(user.id, {
        id: user.id,
        name: user.name,
        follows: user.follows,
        customTargets: new Map(Object.entries(user.customTargets).map(([id, targets]) => [id, new Set(targets)])),
      });
      this.#addKey(user.readerKey, { userId: user.id, kind: 'reader' });
    }
    for (const stream of seed.streams) {
      this.#streams.set(stream.id, {
        id: stream.id,
        name: stream.name,
        owner: stream.owner,
        custom: stream.custom,
        customTargets: stream.customTargets,
      });
      this.#history.set(stream.id, new RingBuffer(MAX_LAST_POSTS));
      this.#addKey(stream.key, { userId: stream.owner, kind: 'stream', streamId: stream.id });
    }
    const now = this.#clock.now();
    const posts = seed.posts
      .map((post, index) => ({
        post,
        at: post.createdAt === undefined ? now - (seed.posts.length - index) * SEED_POST_SPACING_MS : Date.parse(post.createdAt),
      }))
      .sort((a, b) => a.at - b.at);
    for (const { post, at } of posts) {
      const stream = this.#streams.get(post.streamId)!;
      this.#insert({
        id: this.#nextId(at),
        streamId: stream.id,
        streamName: stream.name,
        text: post.content,
        contentType: post.contentType,
        createdAt: at,
        releaseAt: null,
        customTarget: post.customTarget ?? null,
        hidden: false,
      });
    }
  }

  #addKey(key: string, identity: Identity): void {
    const keyDigest = digest(key);
    this.#keys.set(keyDigest.toString('hex'), { digest: keyDigest, identity });
  }

  async authenticate(key: string): Promise<Identity | undefined> {
    // Looking up a digest, then comparing digests in constant time, leaks
    // nothing about how much of a guessed key was right.
    const candidate = digest(key);
    const entry = this.#keys.get(candidate.toString('hex'));
    if (!entry || !timingSafeEqual(entry.digest, candidate)) return undefined;
    return entry.identity;
  }

  async user(id: string): Promise<UserRecord | undefined> {
    return this.#users.get(id);
  }

  async stream(id: string): Promise<StreamRecord | undefined> {
    return this.#streams.get(id);
  }

  async streamsOf(userId: string): Promise<StreamRecord[]> {
    let streams = this.#streamsOf.get(userId);
    if (!streams) {
      const user = this.#users.get(userId);
      if (!user) return [];
      // Users and streams change only on reset: one scan per user, not one per connection.
      const follows = new Set(user.follows);
      streams = [...this.#streams.values()].filter((stream) => follows.has(stream.id) || stream.owner === userId);
      this.#streamsOf.set(userId, streams);
    }
    return [...streams];
  }

  async publish(request: PublishRequest): Promise<PublishResult> {
    const stream = this.#streams.get(request.streamId);
    if (!stream) throw new RangeError(`unknown stream ${request.streamId}`);
    const now = this.#clock.now();
    const dedupKey = request.idempotencyKey === null ? undefined : `${request.streamId}\u0000${request.idempotencyKey}`;
    if (dedupKey !== undefined) {
      this.#expireIdempotency(now);
      const earlier = this.#idempotency.get(dedupKey);
      if (earlier && earlier.expiresAt > now) return { post: earlier.post, duplicate: true };
    }
    const hidden = request.releaseAt !== null && request.releaseAt > now;
    const post: PostRecord = {
      id: this.#nextId(now),
      streamId: stream.id,
      streamName: stream.name,
      text: request.text,
      contentType: request.contentType,
      createdAt: now,
      releaseAt: request.releaseAt,
      customTarget: request.customTarget,
      hidden,
    };
    if (dedupKey !== undefined) this.#idempotency.set(dedupKey, { post, expiresAt: now + this.#windowMs });
    this.#insert(post);
    if (hidden) {
      this.#hiddenById.set(post.id, post);
      this.#scheduler.schedule(post.id, request.releaseAt!);
    }
    this.#emit({ type: 'created', post });
    return { post, duplicate: false };
  }

  #insert(post: PostRecord): void {
    this.#history.get(post.streamId)!.push(post);
    this.#postCount += 1;
  }

  #expireIdempotency(now: number): void {
    for (const [key, entry] of this.#idempotency) {
      if (entry.expiresAt > now) break;
      this.#idempotency.delete(key);
    }
  }

  #release(id: string): void {
    const post = this.#hiddenById.get(id);
    if (!post) return;
    this.#hiddenById.delete(id);
    post.hidden = false;
    this.#emit({ type: 'released', post });
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  async recent(streamId: string, limit: number): Promise<PostRecord[]> {
    return this.#history.get(streamId)?.last(limit) ?? [];
  }

  onEvent(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async stats(): Promise<StoreStats> {
    this.#expireIdempotency(this.#clock.now());
    return {
      posts: this.#postCount,
      scheduledReleases: this.#scheduler.size,
      idempotencyKeys: this.#idempotency.size,
    };
  }

  async reset(): Promise<void> {
    this.#scheduler.clear();
    this.#hiddenById.clear();
    this.#idempotency.clear();
    this.#keys.clear();
    this.#users.clear();
    this.#streams.clear();
    this.#streamsOf.clear();
    this.#history.clear();
    this.#postCount = 0;
    this.#load();
  }

  async close(): Promise<void> {
    this.#scheduler.close();
    this.#listeners.clear();
  }
}
