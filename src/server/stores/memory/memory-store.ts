import { hash } from 'node:crypto';
import { MAX_LAST_POSTS } from '../../../protocol/limits.js';
import type { Clock } from '../../clock.js';
import { ReleaseScheduler } from './release-scheduler.js';
import { MemoryMedia } from './memory-media.js';
import { RingBuffer } from './ring-buffer.js';
import type { Seed } from '../../../protocol/seed.js';
import { postIdFactory } from '../post-ids.js';
import { SeedReads, seedPosts } from '../seed-catalog.js';
import {
  capsInOrder,
  holdingsError,
  holdingsRefusal,
  holdsKey,
  type Held,
  type Holder,
  type HoldingsCaps,
} from '../holding-rules.js';
import type {
  Identity,
  PostRecord,
  PublishRequest,
  PublishResult,
  SnapshottingStore,
  StoreEvent,
  StoreSnapshot,
  StoreStats,
} from '../store.js';

export interface MemoryStoreOptions extends HoldingsCaps {
  seed: Seed;
  clock: Clock;
  /** How long a key deduplicates; 0 deduplicates nothing (a key lapses as its post is stored). */
  idempotencyWindowMs: number;
  /** Called after every change of what `exportSnapshot` returns (a post, a release, a reset, an import). */
  onChange?: () => void;
}

/** What one stream holds until a release (`releases`) or the end of a window (`keys`). */
type StreamHoldings = Record<Holder, Held>;

interface IdempotencyEntry {
  post: PostRecord;
  expiresAt: number;
  textBytes: number;
}

/** A key's SHA-256 (base64): keys are looked up by digest, never by their own text. */
function digest(key: string): string {
  return hash('sha256', key, 'base64');
}

// Idempotency keys are held as digests, so a snapshot can carry them without the keys themselves.
function dedupKeyOf(streamId: string, keyDigest: string): string {
  return `${streamId}\u0000${keyDigest}`;
}

/** The in-memory store: all state in this process, gone when it exits unless a state file keeps it (state-file.ts). */
export class MemoryStore extends SeedReads implements SnapshottingStore {
  readonly #seed: Seed;
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #keys = new Map<string, Identity>();
  readonly #history = new Map<string, RingBuffer<PostRecord>>();
  readonly #hiddenById = new Map<string, PostRecord>();
  readonly #holdings = new Map<string, StreamHoldings>();
  /** The caps in the order they are checked (holding-rules.ts), 0 = none. */
  readonly #caps: readonly number[];
  // Insertion order is expiry order (one window, a clock that only moves
  // forward), so expired entries are always at the front.
  readonly #idempotency = new Map<string, IdempotencyEntry>();
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #scheduler: ReleaseScheduler;
  // Kept across reset so no id is ever issued twice by one process.
  readonly #nextId = postIdFactory();
  readonly #onChange: () => void;
  #postCount = 0;
  /** Uploaded media, which leave with their post: a post out of the history frees its bytes. */
  readonly media = new MemoryMedia(() => this.#onChange());
  /** Hidden posts pushed out of the history: their media stay until they are released. */
  readonly #hiddenOut = new Set<string>();
  /** Released posts out of the history, by stream: their media leave with the stream's next post. */
  readonly #releasedOut = new Map<string, string[]>();

  constructor(options: MemoryStoreOptions) {
    super(options.seed);
    if (!Number.isFinite(options.idempotencyWindowMs) || options.idempotencyWindowMs < 0) {
      throw new RangeError(`idempotencyWindowMs must be a non-negative number, got ${options.idempotencyWindowMs}`);
    }
    this.#seed = options.seed;
    this.#clock = options.clock;
    this.#windowMs = options.idempotencyWindowMs;
    this.#caps = capsInOrder(options);
    this.#scheduler = new ReleaseScheduler(options.clock, (id) => this.#release(id));
    this.#onChange = options.onChange ?? (() => {});
    this.#load();
  }

  #load(withSeedPosts = true): void {
    const seed = this.#seed;
    for (const user of seed.users) {
      this.#addKey(user.readerKey, { userId: user.id, kind: 'reader' });
    }
    for (const stream of seed.streams) {
      this.#history.set(stream.id, new RingBuffer(MAX_LAST_POSTS));
      this.#addKey(stream.key, { userId: stream.owner, kind: 'stream', streamId: stream.id });
    }
    if (!withSeedPosts) return;
    for (const post of seedPosts(seed, this.#clock.now())) this.#insert(post);
  }

  #addKey(key: string, identity: Identity): void {
    this.#keys.set(digest(key), identity);
  }

  authenticate(key: string): Identity | undefined {
    // Looked up by digest: how far a map lookup gets into a guessed key's digest says
    // nothing about how much of the key itself was right.
    return this.#keys.get(digest(key));
  }

  async publish(request: PublishRequest): Promise<PublishResult> {
    const stream = this.catalog.streams.get(request.streamId);
    if (!stream) throw new RangeError(`unknown stream ${request.streamId}`);
    const now = this.#clock.now();
    const dedupKey = holdsKey(request.idempotencyKey, this.#windowMs)
      ? dedupKeyOf(request.streamId, hash('sha256', request.idempotencyKey!, 'hex'))
      : undefined;
    if (dedupKey !== undefined) {
      this.#expireIdempotency(now);
      const earlier = this.#idempotency.get(dedupKey);
      if (earlier && earlier.expiresAt > now) return { post: earlier.post, duplicate: true };
    }
    const hidden = request.releaseAt !== null && request.releaseAt > now;
    const holdings = this.#holdingsOf(stream.id);
    const keyed = dedupKey !== undefined;
    const textBytes = hidden || keyed ? Buffer.byteLength(request.text, 'utf8') : 0;
    // Most posts are neither hidden nor keyed: nothing holds them, no cap applies.
    const refusal = hidden || keyed ? holdingsRefusal(this.#caps, holdings, { hidden, keyed, textBytes }) : undefined;
    if (refusal) throw holdingsError(refusal.kind, stream.id, refusal.max);
    const post: PostRecord = {
      id: this.#nextId(now),
      streamId: stream.id,
      streamName: stream.name,
      text: request.text,
      contentType: request.contentType,
      createdAt: now,
      releaseAt: request.releaseAt,
      customTarget: request.customTarget,
      ...(request.metadata ? { metadata: request.metadata } : {}),
      hidden,
    };
    if (dedupKey !== undefined) {
      this.#idempotency.set(dedupKey, { post, expiresAt: now + this.#windowMs, textBytes });
      holdings.keys.count += 1;
      holdings.keys.bytes += textBytes;
    }
    this.#insert(post);
    if (hidden) {
      holdings.releases.count += 1;
      holdings.releases.bytes += textBytes;
      this.#hiddenById.set(post.id, post);
      this.#scheduler.schedule(post.id, request.releaseAt!);
    }
    this.#emit({ type: 'created', post });
    this.#onChange();
    return { post, duplicate: false };
  }

  #holdingsOf(streamId: string): StreamHoldings {
    let holdings = this.#holdings.get(streamId);
    if (!holdings) {
      holdings = { releases: { count: 0, bytes: 0 }, keys: { count: 0, bytes: 0 } };
      this.#holdings.set(streamId, holdings);
    }
    return holdings;
  }

  #insert(post: PostRecord): void {
    const dropped = this.#history.get(post.streamId)!.push(post);
    // Only a post with media is remembered past the history (100,000 hidden posts kept 5 MiB of ids).
    if (dropped?.hidden) {
      if (this.media.holds(dropped.id)) this.#hiddenOut.add(dropped.id);
    } else if (dropped) this.media.forget(dropped.id);
    // Not at the release itself: the released post is delivered then, and its readers fetch its media.
    for (const id of this.#releasedOut.get(post.streamId) ?? []) this.media.forget(id);
    this.#releasedOut.delete(post.streamId);
    this.#postCount += 1;
  }

  #expireIdempotency(now: number): void {
    for (const [key, entry] of this.#idempotency) {
      if (entry.expiresAt > now) break;
      this.#idempotency.delete(key);
      const holdings = this.#holdingsOf(entry.post.streamId);
      holdings.keys.count -= 1;
      holdings.keys.bytes -= entry.textBytes;
    }
  }

  #release(id: string): void {
    const post = this.#hiddenById.get(id);
    if (!post) return;
    this.#hiddenById.delete(id);
    const holdings = this.#holdingsOf(post.streamId);
    holdings.releases.count -= 1;
    holdings.releases.bytes -= Buffer.byteLength(post.text, 'utf8');
    post.hidden = false;
    if (this.#hiddenOut.delete(id)) {
      const leaving = this.#releasedOut.get(post.streamId);
      if (leaving) leaving.push(id);
      else this.#releasedOut.set(post.streamId, [id]);
    }
    this.#emit({ type: 'released', post });
    this.#onChange();
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  recent(streamId: string, limit: number): PostRecord[] {
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

  async setCustomTargets(userId: string, streamId: string, targets: readonly string[]): Promise<void> {
    this.catalog.setCustomTargets(userId, streamId, targets);
    this.#onChange();
  }

  async reset(): Promise<void> {
    this.#clear();
    this.#load();
    this.catalog.resetSelections();
    this.#onChange();
  }

  #clear(): void {
    this.#scheduler.clear();
    this.#hiddenById.clear();
    this.#holdings.clear();
    this.#idempotency.clear();
    this.#keys.clear();
    this.#history.clear();
    this.media.clear();
    this.#hiddenOut.clear();
    this.#releasedOut.clear();
    this.#postCount = 0;
  }

  exportSnapshot(): StoreSnapshot {
    this.#expireIdempotency(this.#clock.now());
    const history: Record<string, PostRecord[]> = {};
    const inHistory = new Set<string>();
    for (const [streamId, posts] of this.#history) {
      history[streamId] = posts.toArray().map((post) => ({ ...post }));
      for (const post of history[streamId]) inHistory.add(post.id);
    }
    const held = new Map<string, PostRecord>();
    const hold = (post: PostRecord) => {
      if (!inHistory.has(post.id)) held.set(post.id, { ...post });
    };
    // Map order is scheduling order, which a stable sort keeps for equal release times.
    const pendingReleases = [...this.#hiddenById.values()]
      .sort((a, b) => a.releaseAt! - b.releaseAt!)
      .map((post) => {
        hold(post);
        return { postId: post.id, releaseAt: post.releaseAt! };
      });
    const idempotencyKeys = [...this.#idempotency].map(([dedupKey, entry]) => {
      hold(entry.post);
      const keyDigest = dedupKey.slice(entry.post.streamId.length + 1);
      return { streamId: entry.post.streamId, keyDigest, postId: entry.post.id, expiresAt: entry.expiresAt };
    });
    const media = this.media.export(new Set([...inHistory, ...held.keys()]));
    return {
      postCount: this.#postCount,
      history,
      held: [...held.values()],
      pendingReleases,
      idempotencyKeys,
      customTargets: this.catalog.selections(),
      ...(media.length > 0 ? { media } : {}),
    };
  }

  /** The snapshot must come from a store of the same seed: its streams and posts are taken as they are. */
  importSnapshot(snapshot: StoreSnapshot): void {
    this.#clear();
    this.#load(false);
    this.catalog.resetSelections(snapshot.customTargets);
    const byId = new Map<string, PostRecord>();
    for (const [streamId, posts] of Object.entries(snapshot.history)) {
      for (const post of posts) {
        const record = { ...post };
        byId.set(record.id, record);
        this.#history.get(streamId)?.push(record);
      }
    }
    for (const post of snapshot.held) byId.set(post.id, { ...post });
    this.#postCount = snapshot.postCount;
    for (const { postId, releaseAt } of snapshot.pendingReleases) {
      const post = byId.get(postId)!;
      const holdings = this.#holdingsOf(post.streamId);
      holdings.releases.count += 1;
      holdings.releases.bytes += Buffer.byteLength(post.text, 'utf8');
      this.#hiddenById.set(postId, post);
      this.#scheduler.schedule(postId, releaseAt);
    }
    for (const { streamId, keyDigest, postId, expiresAt } of [...snapshot.idempotencyKeys].sort(
      (a, b) => a.expiresAt - b.expiresAt,
    )) {
      const post = byId.get(postId)!;
      const textBytes = Buffer.byteLength(post.text, 'utf8');
      this.#idempotency.set(dedupKeyOf(streamId, keyDigest), { post, expiresAt, textBytes });
      const holdings = this.#holdingsOf(streamId);
      holdings.keys.count += 1;
      holdings.keys.bytes += textBytes;
    }
    this.#expireIdempotency(this.#clock.now());
    const inHistory = new Set(Object.values(snapshot.history).flatMap((posts) => posts.map((post) => post.id)));
    this.media.import(snapshot.media ?? [], (id) => byId.get(id));
    // A hidden post out of the history keeps its media until its release, as before the stop.
    for (const { postId } of snapshot.media ?? []) {
      if (!inHistory.has(postId) && byId.get(postId)?.hidden) this.#hiddenOut.add(postId);
    }
    this.#onChange();
  }

  async close(): Promise<void> {
    this.#scheduler.close();
    this.#listeners.clear();
  }
}
