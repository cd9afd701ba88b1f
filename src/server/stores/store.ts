// stores/: where posts, keys and selections live. Here the contract every engine keeps, split by
// job, and the rules the engines share; the engines sit in rooms of their own: memory/ (one
// process) and redis/ (several instances on one keyspace, its Lua scripts and key layout).
import type { Seed } from '../../protocol/seed.js';
import type { ContentType, Post } from '../../protocol/types.js';
import { isoTime } from '../../protocol/dates.js';
import type { Awaitable } from './awaitable.js';
import type { MediaKeeper, MediaSnapshot } from './media-keeper.js';

// The Store interface's answers are Awaitable: its users take the word from here.
export { isPending, type Awaitable } from './awaitable.js';

/** Who a key speaks for. A stream key acts as the stream's owner. */
export interface Identity {
  userId: string;
  kind: 'reader' | 'stream';
  /** The one stream a stream key may publish to. */
  streamId?: string;
}

export interface UserRecord {
  id: string;
  name: string;
  follows: readonly string[];
  /** Selected targets per followed custom stream (case-sensitive). */
  customTargets: ReadonlyMap<string, ReadonlySet<string>>;
}

/** A stream as the seed gives it, without its key; the directory fields are what GET /v1/streams shows. */
export interface StreamRecord extends Readonly<Omit<Seed['streams'][number], 'key' | 'customTargets' | 'createdAt'>> {
  readonly customTargets: readonly string[];
  /** Epoch ms of the seed's `createdAt`; null when it gives none. */
  readonly createdAt: number | null;
}

/** Every user's selected targets: user id → custom stream id → targets. */
export type TargetSelections = Record<string, Record<string, string[]>>;

/** A stored post. `hidden` turns false at release; everything else is fixed. */
export interface PostRecord {
  readonly id: string;
  readonly streamId: string;
  readonly streamName: string;
  readonly text: string;
  readonly contentType: ContentType;
  readonly createdAt: number;
  readonly releaseAt: number | null;
  readonly customTarget: string | null;
  /** What a REST publisher sent as `metadata` (PROTOCOL.md B6); absent when none. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  hidden: boolean;
}

export interface PublishRequest {
  streamId: string;
  text: string;
  contentType: ContentType;
  releaseAt: number | null;
  customTarget: string | null;
  idempotencyKey: string | null;
  metadata?: Record<string, unknown> | undefined;
}

export interface PublishResult {
  post: PostRecord;
  duplicate: boolean;
}

export type StoreEvent = { type: 'created' | 'released'; post: PostRecord };

/**
 * Everything a memory store holds beyond its seed, as plain data: what a state file and
 * `GET /_admin/export` carry. Times are epoch ms on the service's clock. No API key appears;
 * idempotency keys are SHA-256 digests (hex) of the key as given.
 */
export interface StoreSnapshot {
  /** Posts the store counted since the seed was loaded (history keeps only the last ones). */
  postCount: number;
  /** Each stream's history, oldest first. */
  history: Record<string, PostRecord[]>;
  /** Posts a pending release or an idempotency key still refers to that no history holds. */
  held: PostRecord[];
  /** Hidden posts waiting for their release, by id, in release order. */
  pendingReleases: { postId: string; releaseAt: number }[];
  idempotencyKeys: { streamId: string; keyDigest: string; postId: string; expiresAt: number }[];
  /** Every user's selected targets; absent (a state file saved before they could change): the seed's. */
  customTargets?: TargetSelections;
  /** The uploaded media of the posts above (absent: none). */
  media?: MediaSnapshot[];
}

export interface StoreStats {
  posts: number;
  scheduledReleases: number;
  idempotencyKeys: number;
}

/** Who a key speaks for, and the seed's users and streams with each user's selected targets. */
export interface KeyCatalog {
  /** At once in memory; a shared store asks its engine. */
  authenticate(key: string): Awaitable<Identity | undefined>;
  // Users and streams come from the seed, which every store holds in memory: read at once.
  user(id: string): UserRecord | undefined;
  stream(id: string): StreamRecord | undefined;
  /** Streams a user follows or owns, in seed order. */
  streamsOf(userId: string): StreamRecord[];
  /** Every stream, in seed order. */
  streams(): StreamRecord[];
  /**
   * Replaces a user's selected targets on a custom stream it follows (checked by the caller).
   * The user's record changes in place, on every instance of a shared store, before this
   * resolves here: subscriptions hold that record, so delivery follows at once.
   */
  setCustomTargets(userId: string, streamId: string, targets: readonly string[]): Promise<void>;
}

/** Posts and their history, idempotency, the release schedule, and the news of created and released posts. */
export interface PostLog {
  /** Stores a post; a repeated idempotency key is deduplicated atomically. */
  publish(request: PublishRequest): Promise<PublishResult>;
  /**
   * Up to `limit` most recent posts of a stream, oldest first; with `asOf` (a `position()`),
   * only posts stored by then: later ones reach a new subscription as events.
   */
  recent(streamId: string, limit: number, asOf?: number): Awaitable<PostRecord[]>;
  /** Listens for created and released posts; returns an unsubscribe function. */
  onEvent(listener: (event: StoreEvent) => void): () => void;
}

/** Where uploaded media are kept. */
export interface MediaHolder {
  /** With a shared engine, where every instance reaches them. */
  readonly media: MediaKeeper;
}

/** What the admin endpoints ask of the store: its figures, and a way back to the seed. */
export interface StoreAdmin {
  stats(): Promise<StoreStats>;
  /** Back to the seed: posts, idempotency keys and pending releases are dropped. */
  reset(): Promise<void>;
}

/**
 * Every piece of service state, each job behind its own interface above: a room takes only
 * the parts it uses, and only what opens and closes a store (the server's assembly, the
 * contract suite) holds it whole. It is asynchronous (where a shared engine must be asked) so
 * that a store on a shared engine can replace the in-memory one and let several `serve`
 * processes act as one service.
 */
export interface Store extends KeyCatalog, PostLog, MediaHolder, StoreAdmin {
  close(): Promise<void>;
}

/**
 * Why a shared store cannot be used (PROTOCOL.md B8): `unreachable` (no connection, or no
 * reply in time), `out-of-memory` (Redis full: writes refused), `script-missing` (its script
 * cache flushed while publishes were in flight), `reloading` (it lost its data and the seed is
 * being loaded again), `evicting` (its `maxmemory-policy` was set to one that evicts keys).
 */
export type StoreTrouble = 'unreachable' | 'out-of-memory' | 'script-missing' | 'reloading' | 'evicting';

/** What `GET /readyz` says of a store that cannot be used. */
export interface Unusable {
  reason: StoreTrouble;
  message: string;
}

/** What a store on an engine shared by several instances adds: they must keep in step. */
export interface SharedStore extends Store {
  /** Resolves once this instance has applied every change made anywhere before the call (a selection made through another instance is read back). */
  caughtUp(): Promise<void>;
  /**
   * Where the store's event feed stands in this process, since its reads can see posts this
   * process has not dispatched yet; undefined when it does not know.
   */
  position(): number | undefined;
  /** Moves the clock the instances share, for all of them; releases due by then have been sent to this instance's subscribers when it resolves. */
  advanceClock(ms: number): Promise<void>;
  /** Called when events may have been missed (the link to the engine dropped): subscribers must reconnect and replay to fill the gap. */
  onInterrupted(listener: (reason: string) => void): () => void;
  /** Why the store cannot be used now (`GET /readyz`); undefined when it can. */
  unusable(): Unusable | undefined;
  /** Once a keep-alive round: what the engine says of itself (it evicts keys, say) is read again. */
  keepAliveRound(): Promise<void>;
}

/** What a store that keeps its state in this process adds: that state as data, for a state file and `GET /_admin/export`. */
export interface Snapshotting {
  exportSnapshot(): StoreSnapshot;
  /** Replaces the state with a snapshot's (its posts, releases and keys); the seed's posts are not added again. */
  importSnapshot(snapshot: StoreSnapshot): void;
}

/** A store that keeps its state in this process: the memory store. */
export interface SnapshottingStore extends Store, Snapshotting {}

/** Whether a store, or any part of one, is on a shared engine. */
export function isShared<T extends object>(store: T): store is T & SharedStore {
  return 'caughtUp' in store;
}

/** Whether a store, or any part of one, keeps its state in this process. */
export function isSnapshotting<T extends object>(store: T): store is T & SnapshottingStore {
  return 'exportSnapshot' in store;
}

/**
 * A post whole in the wire form, hidden or not: what a state file keeps. A reader gets what
 * `postFor` (service/visibility.ts) lets it see, never this.
 */
export function storedPost(record: PostRecord): Post {
  return {
    id: record.id,
    streamId: record.streamId,
    streamName: record.streamName,
    text: record.text,
    contentType: record.contentType,
    createdAt: isoTime(record.createdAt),
    releaseAt: record.releaseAt === null ? null : isoTime(record.releaseAt),
    hidden: record.hidden,
    customTarget: record.customTarget,
    ...(record.metadata === undefined ? {} : { metadata: record.metadata as Record<string, unknown> }),
  };
}
