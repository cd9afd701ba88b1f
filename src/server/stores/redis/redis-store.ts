// The Redis store: what each operation asks of the keyspace and what it waits for here (an ack
// only after the post's event is dispatched on this instance), and what each event does here.
// Apart: keeping in step with the keyspace, at start and after an outage or a loss
// (redis-follow.ts), the scripts (redis-scripts.ts), the key layout (redis-keys.ts), the
// connections and how commands go (redis-link.ts), the event feed's order (redis-feed.ts), the
// release claims (redis-releases.ts), what is loaded of the seed (redis-seed.ts) and the caps
// (holding-rules.ts).
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { ProtocolError } from '../../../protocol/errors.js';
import { PUBLISH_COMMAND } from '../../../protocol/types.js';
import { postIdFactory } from '../post-ids.js';
import { MAX_LAST_POSTS } from '../../../protocol/limits.js';
import type { AdjustableClock } from '../../clock.js';
import { scrubSecrets, silentLogger, type Logger } from '../../logger.js';
import type { Seed } from '../../../protocol/seed.js';
import type {
  Identity,
  PostRecord,
  PublishRequest,
  PublishResult,
  SharedStore,
  StoreEvent,
  StoreStats,
  Unusable,
} from '../store.js';
import { SeedReads, seedDigest } from '../seed-catalog.js';
import { capsInOrder, holdingsError, holdsKey, type HoldingKind, type HoldingsCaps } from '../holding-rules.js';
import { redactRedisUrl, redisUrlPassword } from './redis-keys.js';
import { StoreError } from '../store-error.js';
import { SCRIPTS } from './redis-scripts.js';
import { RedisLink, UnknownOutcome } from './redis-link.js';
import { EventFeed, type EventMessage } from './redis-feed.js';
import { keyDigest, seedIdentities } from './redis-seed.js';
import { KeyspaceFollower, STALE } from './redis-follow.js';
import { StoreHealth } from './store-health.js';
import { EvictionWatch } from './redis-eviction.js';
import { RedisReleases } from './redis-releases.js';
import { RedisMedia } from './redis-media.js';

export interface RedisStoreOptions extends HoldingsCaps {
  /** `redis://[:password@]host:port[/db]`. */
  url: string;
  prefix: string;
  /** Replace whatever seed the keyspace holds (and all its state) with this one. */
  resetStore?: boolean;
  seed: Seed;
  clock: AdjustableClock;
  /** How long a key deduplicates; 0 deduplicates nothing (a key lapses as its post is stored). */
  idempotencyWindowMs: number;
  logger?: Logger;
  /** Start on a Redis whose `maxmemory-policy` may evict keys (refused otherwise). */
  allowEviction?: boolean;
}

/** Whether `promise` settles within `ms` (a timer otherwise; its outcome is not awaited past that). */
function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

const LATE =
  "the service's store (Redis) ran this publish after its deadline (it was paused or busy) and refused it; nothing was stored, retry";

/**
 * Every piece of state in Redis, so several `serve` processes act as one service.
 * An instance keeps only its connections and an in-process copy of the seed's users
 * and streams (checked equal to the keyspace's by digest). Events reach every instance
 * through one pub/sub channel, numbered by Redis, so each instance sees them in one
 * global order and can tell when it missed some.
 */
export class RedisStore extends SeedReads implements SharedStore {
  readonly #link: RedisLink;
  readonly #feed: EventFeed;
  readonly #prefix: string;
  readonly #digest: string;
  readonly #clock: AdjustableClock;
  readonly #windowMs: number;
  /** The caps in the order they are checked (holding-rules.ts), 0 = none. */
  readonly #caps: readonly number[];
  readonly #logger: Logger;
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #nextId = postIdFactory();
  readonly #stopClock: () => void;
  /** Told apart from the other instances in clock events: the one that advances claims. */
  readonly #instanceId = randomBytes(8).toString('hex');
  readonly #releases: RedisReleases;
  /** Whether the store can be used, and why not (`/readyz`, the refusals' wording). */
  readonly #health: StoreHealth;
  /** The seed's keys, to answer a key of the seed when the keyspace lost its key table. */
  readonly #identities: Map<string, Identity>;
  /** At start and after an outage or a loss: the seed loaded, the feed followed from where Redis stands. */
  readonly #follower: KeyspaceFollower;
  /** Uploaded media, in Redis: an upload and a `GET` may reach any instance. */
  readonly media: RedisMedia;
  readonly #eviction: EvictionWatch;

  private constructor(options: RedisStoreOptions) {
    super(options.seed);
    this.#prefix = options.prefix;
    this.#digest = seedDigest(options.seed);
    this.#clock = options.clock;
    this.#windowMs = options.idempotencyWindowMs;
    this.#caps = capsInOrder(options);
    const password = redisUrlPassword(options.url);
    this.#logger = scrubSecrets(options.logger ?? silentLogger, password === undefined ? [] : [password]);
    this.#health = new StoreHealth(this.#logger, () =>
      // Eviction lets writes through: only the policy says it is over.
      this.#health.trouble === 'evicting' ? void this.#eviction.check() : void this.#follower.probe(),
    );
    this.#identities = seedIdentities(options.seed);
    this.#link = new RedisLink({
      url: options.url,
      prefix: options.prefix,
      health: this.#health,
      onReconnected: () => {
        // The first connection is start's to follow from.
        if (!this.#follower.started) return;
        this.#health.reachable();
        // Perhaps another Redis (a fail-over): its clock is read again for the changes' deadlines.
        void this.#link.readClock();
        this.#follower.resumeFeed();
        void this.#releases.run();
      },
      onError: (error) => this.#follower.onClientError(error),
      onFeedReady: () => {
        if (this.#follower.started) this.#follower.resumeFeed();
      },
      onFeedError: (error) => this.#follower.onFeedLost(error),
    });
    this.#feed = new EventFeed(this.#logger, (message) => this.#apply(message));
    this.#eviction = new EvictionWatch({
      info: () => this.#link.command(this.#link.client.sendCommand<string>(['INFO', 'memory', 'stats'])),
      health: this.#health,
      logger: this.#logger,
      allowEviction: options.allowEviction === true,
      onLoss: (reason) => this.#feed.announceLoss(reason),
    });
    this.#releases = new RedisReleases({
      clock: this.#clock,
      link: this.#link,
      feed: this.#feed,
      logger: this.#logger,
      follow: () => this.#follower.follow(),
    });
    this.#stopClock = this.#clock.onAdvance(() => this.#releases.claims.arm());
    this.media = new RedisMedia({
      eval: (script, args) => this.#link.eval(script, args),
      putBytes: (key, bytes) => this.#link.putBytes(key, bytes),
      getItem: (key) => this.#link.getBytes(key, ['type', 'bytes', 'stream', 'rel']),
      key: (name) => this.#key(name),
    });
    this.#follower = new KeyspaceFollower({
      link: this.#link,
      feed: this.#feed,
      health: this.#health,
      eviction: this.#eviction,
      releases: this.#releases,
      clock: this.#clock,
      catalog: this.catalog,
      logger: this.#logger,
      prefix: this.#prefix,
      seed: options.seed,
      digest: this.#digest,
      identities: this.#identities,
    });
  }

  /** Connects, loads the seed once for every instance, and starts following events. */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    const store = new RedisStore(options);
    try {
      await store.#follower.start(options.resetStore === true, options.allowEviction === true);
    } catch (error) {
      await store.close();
      if (error instanceof StoreError) throw error;
      throw new StoreError(
        'store-unreachable',
        `cannot use the store at ${redactRedisUrl(options.url)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return store;
  }

  #key(name: string): string {
    return this.#prefix + name;
  }

  /** What an event does on this instance, as the feed dispatches it. */
  #apply(message: EventMessage): void {
    switch (message.t) {
      case 'created':
        this.#emit({ type: message.t, post: message.p });
        if (message.p.hidden && message.p.releaseAt !== null)
          this.#releases.claims.scheduled(message.p.releaseAt, message.p.id);
        break;
      case 'released':
        this.#emit({ type: message.t, post: message.p });
        this.#releases.claims.released(message.p.id);
        if (message.n !== undefined) this.#releases.claims.next(message.n);
        break;
      case 'clock':
        this.#clock.syncOffset(message.o);
        if (message.i !== this.#instanceId) this.#releases.claims.advancedElsewhere();
        break;
      case 'reset':
        if (message.o !== undefined) this.#clock.syncOffset(message.o);
        this.#releases.claims.reset();
        this.catalog.resetSelections();
        break;
      case 'targets':
        this.catalog.setCustomTargets(message.u, message.k, message.v);
        break;
    }
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  async authenticate(key: string): Promise<Identity | undefined> {
    const digest = keyDigest(key);
    const found = await this.#link.command(this.#link.client.hGet(this.#key('keys'), digest));
    if (found !== null) return JSON.parse(found) as Identity;
    // A key of the seed the keyspace does not know: its key table is gone (a loss). The key
    // is answered from the seed, which the keyspace is tied to, and the seed loaded again.
    const identity = this.#identities.get(digest);
    if (identity !== undefined) void this.#follower.probe();
    return identity;
  }

  async publish(request: PublishRequest): Promise<PublishResult> {
    const stream = this.catalog.streams.get(request.streamId);
    if (!stream) throw new RangeError(`unknown stream ${request.streamId}`);
    // Redis may evict the post once acknowledged: refused until the policy is noeviction again.
    if (this.#health.evicting) throw this.#health.refusal('evicting', PUBLISH_COMMAND);
    const now = this.#clock.now();
    const keyed = holdsKey(request.idempotencyKey, this.#windowMs);
    let deadline = 0;
    let notBefore = 0;
    const send = () =>
      this.#follower.change(
        SCRIPTS.publish,
        () => [
          this.#digest,
          stream.id,
          stream.name,
          request.text,
          request.contentType,
          now,
          request.releaseAt ?? '',
          request.customTarget ?? '',
          keyed ? 1 : 0,
          request.idempotencyKey ?? '',
          this.#windowMs,
          this.#nextId(now),
          ...this.#caps,
          request.metadata ? JSON.stringify(request.metadata) : '',
          (deadline = this.#link.changeDeadline()),
          notBefore,
        ],
        PUBLISH_COMMAND,
        (script, args) => this.#link.change(script, args, PUBLISH_COMMAND),
      );
    let reply: unknown[];
    try {
      reply = await send();
    } catch (error) {
      if (!keyed || !(error instanceof UnknownOutcome) || !error.connectionLost) throw error;
      // Its key makes a second sending safe: once Redis answers again and the first one's
      // deadline has passed there (it can no longer be made), the answer says which it was.
      // (Not when Redis holds it still: a second sending would wait behind the first.)
      notBefore = deadline;
      reply = await this.#sendAgain(send, notBefore, error);
    }
    const outcome = reply[0] as string;
    if (outcome === 'expired') throw new ProtocolError('unavailable', LATE, PUBLISH_COMMAND);
    if (outcome === 'limit') throw holdingsError(reply[1] as HoldingKind, stream.id, reply[2] as number);
    // Stored: Redis takes writes (again, after being full).
    this.#health.usable();
    const post = JSON.parse(reply[1] as string) as PostRecord;
    if (outcome === 'duplicate') return { post, duplicate: true };
    const seq = reply[2] as number;
    // This instance claims the release on time; the others only if it does not.
    if (post.hidden) this.#releases.claims.published(post.id);
    // Nothing comes before it that this instance has not dispatched: its subscribers get it now,
    // not once Redis echoes it on the feed (the echo is then dropped as already seen).
    if (this.#feed.up && this.#feed.lastSeq === seq - 1) this.#feed.dispatch({ s: seq, t: 'created', p: post });
    // The post is stored: if the feed drops before its event comes back, the publisher still
    // gets its ack, and this instance's subscribers, closed for the gap, replay it.
    else await this.#feed.awaitSeq(seq).catch(() => {});
    return { post, duplicate: false };
  }

  /**
   * A keyed publish whose first sending has an unknown outcome, sent again (`send`) once this
   * instance follows Redis again and Redis's clock is past `notBefore`; `unknown` if that does
   * not come within the link's wait for an outcome.
   */
  async #sendAgain(send: () => Promise<unknown[]>, notBefore: number, unknown: UnknownOutcome): Promise<unknown[]> {
    const giveUpAt = Date.now() + this.#link.outcomeWaitMs;
    for (;;) {
      const left = giveUpAt - Date.now();
      if (left <= 0 || !(await within(this.#follower.following(), left))) throw unknown;
      const reply = await send();
      if (reply[0] !== 'early') return reply;
      await delay(Math.max(1, Math.min(notBefore - this.#link.redisNow() + 1, left)));
    }
  }

  async setCustomTargets(userId: string, streamId: string, targets: readonly string[]): Promise<void> {
    const [, seq] = await this.#follower.change(SCRIPTS.setTargets, () => [
      this.#digest,
      userId,
      streamId,
      JSON.stringify(targets),
    ]);
    // Stored: a feed that drops before the event returns re-reads every selection as it resumes.
    await this.#feed.awaitSeq(seq as number).catch(() => {});
  }

  async caughtUp(): Promise<void> {
    const seq = await this.#link.command(this.#link.client.get(this.#key('seq')));
    await this.#feed.awaitSeq(Number(seq ?? 0));
  }

  /** Resolves once this instance reaches Redis and follows its events (again, after an outage). */
  following(): Promise<void> {
    return this.#follower.following();
  }

  position(): number | undefined {
    return this.#feed.lastSeq;
  }

  async recent(streamId: string, limit: number, asOf?: number): Promise<PostRecord[]> {
    if (!this.catalog.streams.has(streamId)) return [];
    const [seq, ...posts] = await this.#link.eval(SCRIPTS.recent, [
      streamId,
      Math.min(limit, MAX_LAST_POSTS),
      asOf ?? '',
    ]);
    await this.#feed.awaitSeq(seq as number);
    // A post in the history whose text was evicted (a loss, announced by the eviction watch).
    return posts.filter((json) => typeof json === 'string').map((json) => JSON.parse(json) as PostRecord);
  }

  onEvent(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onInterrupted(listener: (reason: string) => void): () => void {
    return this.#feed.onInterrupted(listener);
  }

  async advanceClock(ms: number): Promise<void> {
    const [, seq] = await this.#follower.change(SCRIPTS.advanceClock, () => [ms, this.#instanceId]);
    await this.#feed.awaitSeq(seq as number);
    await this.#releases.run();
  }

  async stats(): Promise<StoreStats> {
    const [posts, scheduledReleases, idempotencyKeys] = await this.#link.eval(SCRIPTS.stats, [this.#clock.now()]);
    return {
      posts: posts as number,
      scheduledReleases: scheduledReleases as number,
      idempotencyKeys: idempotencyKeys as number,
    };
  }

  async reset(): Promise<void> {
    if ((await this.#follower.loadSeed('reset')) === 'mismatch') throw new ProtocolError('unavailable', STALE);
  }

  /** Why the store cannot be used now (`GET /readyz`), or undefined when it can. */
  unusable(): Unusable | undefined {
    const trouble =
      this.#health.trouble ?? (this.#feed.following && this.#link.client.isReady ? undefined : 'unreachable');
    return trouble === undefined ? undefined : { reason: trouble, message: this.#health.refusal(trouble).message };
  }

  /** Once a keep-alive round: whether Redis evicts keys (`INFO`), and its clock. */
  async keepAliveRound(): Promise<void> {
    if (this.#follower.closed) return;
    await Promise.all([this.#eviction.check(), this.#link.readClock()]);
  }

  async close(): Promise<void> {
    if (this.#follower.closed) return;
    this.#follower.closed = true;
    this.#stopClock();
    this.#health.close();
    this.#releases.claims.close();
    this.#listeners.clear();
    this.#feed.close();
    await this.#link.close();
  }
}
