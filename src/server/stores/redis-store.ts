// Over 400 lines on purpose: the event feed, the order it is dispatched in, the waiters for a
// sequence number and the release timer share this class's private state; each method here
// depends on the others' invariants (an ack only after the post's event is dispatched here).
// The scripts (redis-scripts.ts), key layout (redis-keys.ts) and seed reads are already apart.
import { createHash, randomBytes } from 'node:crypto';
import { createClient, RESP_TYPES } from 'redis';
import { ProtocolError } from '../../protocol/errors.js';
import { PUBLISH_COMMAND } from '../../protocol/types.js';
import { postIdFactory } from './post-ids.js';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import type { AdjustableClock } from '../clock.js';
import { scrubSecrets, silentLogger, type Logger } from '../logger.js';
import type { Seed } from '../../protocol/seed.js';
import type {
  Identity,
  PostRecord,
  PublishRequest,
  PublishResult,
  SharedStore,
  StoreEvent,
  StoreStats,
  TargetSelections,
} from './store.js';
import { SeedReads, holdingsError, seedDigest, seedPosts, type HoldingsCaps } from './seed-catalog.js';
import { eventsChannel, redactRedisUrl, redisUrlPassword } from './redis-keys.js';
import { StoreError } from './store-error.js';
import { CommandDeadline } from './command-deadline.js';
import { SCRIPTS, type RedisScript } from './redis-scripts.js';
import { checkRedisConfig } from './redis-config.js';
import { StoreHealth, troubleError, type Unusable } from './store-health.js';
import { ReleaseClaims } from './release-claims.js';
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

type RedisClient = ReturnType<typeof createClient>;

type EventMessage =
  | { s: number; t: 'created'; p: PostRecord }
  | { s: number; t: 'released'; p: PostRecord; n?: [number, string] | null }
  | { s: number; t: 'clock'; o: number; i: string }
  | { s: number; t: 'reset'; e?: string; o?: number; l?: boolean }
  | { s: number; t: 'targets'; u: string; k: string; v: string[] };

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

const RELEASE_BATCH = 200;
/** A claim that failed (the store unreachable) is tried again this much later, not at once. */
const RELEASE_RETRY_MS = 1_000;
const MAX_RECONNECT_DELAY_MS = 2_000;
/** A command with no reply by then fails (`unavailable`), as with the client library's default. */
const COMMAND_TIMEOUT_MS = 5_000;
const STALE = 'the store now holds a different seed; this instance must be restarted';
/** Where every event message names its type: `{"s":<seq>,` then this, for a reset. */
const RESET_TYPE = '"t":"reset"';

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The `targets` hash as selections: `{user}|{stream}` → JSON array. */
function selectionsOf(hash: Record<string, string>): TargetSelections {
  const selections: TargetSelections = {};
  for (const [field, json] of Object.entries(hash)) {
    const [userId = '', streamId = ''] = field.split('|');
    (selections[userId] ??= {})[streamId] = JSON.parse(json) as string[];
  }
  return selections;
}

/** Replies as bytes (uploaded media). */
const AS_BYTES = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const;

function unavailable(command?: string): ProtocolError {
  return troubleError('unreachable', command);
}

/** The seed's keys as the keyspace holds them: SHA-256 of the key → who it speaks for. */
function seedIdentities(seed: Seed): Map<string, Identity> {
  return new Map<string, Identity>([
    ...seed.users.map((user): [string, Identity] => [sha256(user.readerKey), { userId: user.id, kind: 'reader' }]),
    ...seed.streams.map((stream): [string, Identity] => [
      sha256(stream.key),
      { userId: stream.owner, kind: 'stream', streamId: stream.id },
    ]),
  ]);
}

/**
 * Every piece of state in Redis, so several `serve` processes act as one service.
 * An instance keeps only its connections and an in-process copy of the seed's users
 * and streams (checked equal to the keyspace's by digest). Events reach every instance
 * through one pub/sub channel, numbered by Redis, so each instance sees them in one
 * global order and can tell when it missed some.
 */
export class RedisStore extends SeedReads implements SharedStore {
  readonly #client: RedisClient;
  readonly #subscriber: RedisClient;
  readonly #prefix: string;
  readonly #seed: Seed;
  readonly #digest: string;
  readonly #clock: AdjustableClock;
  readonly #windowMs: number;
  readonly #caps: readonly [number, number, number, number];
  readonly #logger: Logger;
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #interruptListeners = new Set<(reason: string) => void>();
  readonly #waiters: Waiter[] = [];
  readonly #whenFollowing: (() => void)[] = [];
  readonly #nextId = postIdFactory();
  readonly #stopClock: () => void;
  readonly #deadline = new CommandDeadline(COMMAND_TIMEOUT_MS);
  /** The last event this instance dispatched; undefined until it knows where the feed stands. */
  #lastSeq: number | undefined;
  #feedUp = false;
  /** Told apart from the other instances in clock events: the one that advances claims. */
  readonly #instanceId = randomBytes(8).toString('hex');
  readonly #claims: ReleaseClaims;
  #releasing: Promise<void> | undefined;
  #releaseAgain = false;
  #closed = false;
  /** Whether the store can be used, and why not (`/readyz`, the refusals' wording). */
  readonly #health: StoreHealth;
  /** The seed's keys, to answer a key of the seed when the keyspace lost its key table. */
  readonly #identities: Map<string, Identity>;
  /** The load of the seed this instance follows (a random id each load), `''` until known. */
  #epoch = '';
  /** Loading the seed again and following the feed from there, after an outage or a loss. */
  #following: Promise<void> | undefined;
  #probing: Promise<void> | undefined;
  #started = false;
  readonly #cachedScripts = new Set<string>();
  #evalsSent = 0;
  /** Uploaded media, in Redis: an upload and a `GET` may reach any instance. */
  readonly media: RedisMedia;

  private constructor(options: RedisStoreOptions) {
    super(options.seed);
    this.#prefix = options.prefix;
    this.#seed = options.seed;
    this.#digest = seedDigest(options.seed);
    this.#clock = options.clock;
    this.#windowMs = options.idempotencyWindowMs;
    this.#caps = [
      options.maxPendingReleasesPerStream ?? 0,
      options.maxPendingReleaseBytesPerStream ?? 0,
      options.maxIdempotencyKeysPerStream ?? 0,
      options.maxIdempotencyBytesPerStream ?? 0,
    ];
    const password = redisUrlPassword(options.url);
    this.#logger = scrubSecrets(options.logger ?? silentLogger, password === undefined ? [] : [password]);
    this.#health = new StoreHealth(this.#logger, () => void this.#probe());
    this.#identities = seedIdentities(options.seed);
    let everReady = false;
    this.#client = createClient({
      url: options.url,
      // A command while Redis is away fails at once (`unavailable`) instead of waiting in a queue.
      disableOfflineQueue: true,
      // The limit on each command is #deadline's, one timer for all (not one per command).
      commandOptions: { timeout: 0 },
      socket: {
        // The first connection must succeed: a wrong URL is reported, not retried forever.
        reconnectStrategy: (retries, cause) =>
          everReady ? Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) + Math.floor(Math.random() * 100) : cause,
      },
    });
    this.#client.on('ready', () => {
      // A restarted Redis starts with an empty script cache.
      this.#cachedScripts.clear();
      // Reconnected: the first connection is #start's to follow from.
      if (everReady && this.#started) {
        this.#health.reachable();
        this.#resumeFeed();
        void this.#releaseDue();
      }
      everReady = true;
    });
    this.#client.on('error', (error: Error) => this.#onClientError(error));
    this.#subscriber = this.#client.duplicate();
    this.#subscriber.on('error', (error: Error) => this.#onFeedLost(error));
    this.#subscriber.on('ready', () => {
      if (this.#started) this.#resumeFeed();
    });
    this.#claims = new ReleaseClaims(this.#clock, () => void this.#releaseDue());
    this.#stopClock = this.#clock.onAdvance(() => this.#claims.arm());
    // Bytes asked for on the one command that reads them (withTypeMapping would build a second
    // client object on this one as its prototype; every other command keeps the client as it is).
    this.media = new RedisMedia({
      eval: (script, args) => this.#eval(script, args),
      putBytes: (key, bytes) => this.#command(this.#client.hSet(key, 'bytes', bytes)).then(() => undefined),
      getItem: (key) =>
        this.#command(
          this.#client.sendCommand<(Buffer | null)[]>(['HMGET', key, 'type', 'bytes', 'stream', 'rel'], AS_BYTES),
        ),
      key: (name) => this.#key(name),
    });
  }

  /** A plain command under the deadline; Redis away or too slow is `unavailable`. */
  async #command<T>(reply: Promise<T>): Promise<T> {
    try {
      const result = await this.#deadline.bound(reply);
      this.#health.reachable();
      return result;
    } catch (error) {
      throw this.#health.failed(error);
    }
  }

  /** Connects, loads the seed once for every instance, and starts following events. */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    const store = new RedisStore(options);
    try {
      await store.#start(options.resetStore === true, options.allowEviction === true);
    } catch (error) {
      await store.close();
      if (error instanceof StoreError) throw error;
      throw new StoreError(
        'store-unreachable',
        `cannot use the store at ${redactRedisUrl(options.url)}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    return store;
  }

  async #start(resetStore: boolean, allowEviction: boolean): Promise<void> {
    await this.#client.connect();
    await checkRedisConfig(this.#client, { allowEviction, logger: this.#logger });
    await this.#subscriber.connect();
    await this.#deadline.bound(
      this.#subscriber.subscribe(eventsChannel(this.#prefix), (message) => this.#onMessage(message)),
    );
    this.#feedUp = true;
    const loaded = await this.#loadSeed(resetStore ? 'replace' : 'start');
    if (loaded === 'mismatch') {
      throw new StoreError(
        'store-seed-mismatch',
        `the Redis keyspace "${this.#prefix}" holds a different seed: replace it and all its posts with --reset-store (resetStore), or use another --redis-prefix (redisPrefix)`,
      );
    }
    await this.#catchUp();
    this.#started = true;
  }

  /** Where the feed stands, the shared clock, and releases that fell due while nobody watched. */
  async #catchUp(): Promise<void> {
    // Sent in this order on one connection: selections read after `seq` are at least as new as it.
    const [seq, offset, targets, epoch] = await this.#deadline.bound(
      Promise.all([
        this.#client.get(this.#key('seq')),
        this.#client.get(this.#key('clock')),
        this.#client.hGetAll(this.#key('targets')),
        this.#client.get(this.#key('epoch')),
      ]),
    );
    const at = Number(seq ?? 0);
    const loaded = epoch ?? '';
    // Another load, numbered from where this instance's count had not reached: a loss whose
    // reset event has not come yet (it is then dropped as seen, like every event up to `at`).
    if (this.#lastSeq !== undefined && loaded !== this.#epoch && at < this.#lastSeq)
      this.#interrupt(`the store's event counter went back from ${this.#lastSeq} to ${at}`);
    if (this.#lastSeq === undefined || at >= this.#lastSeq) this.#epoch = loaded;
    this.#lastSeq = Math.max(this.#lastSeq ?? 0, at);
    this.#clock.syncOffset(Number(offset ?? 0));
    this.catalog.resetSelections(selectionsOf(targets));
    await this.#releaseDue();
  }

  #key(name: string): string {
    return this.#prefix + name;
  }

  /**
   * Scripts sent in full once and known to be in Redis's script cache since the client last
   * connected: only these go by digest. Calls are numbered as they are sent, so a NOSCRIPT
   * answer (the cache flushed by hand) tells whether a call sent later could overtake its retry.
   */
  async #eval(script: RedisScript, args: (string | number)[]): Promise<unknown[]> {
    const options = { arguments: [this.#prefix, ...args.map(String)] };
    try {
      if (this.#cachedScripts.has(script.sha)) {
        const sent = ++this.#evalsSent;
        try {
          const reply = (await this.#deadline.bound(this.#client.evalSha(script.sha, options))) as unknown[];
          this.#health.reachable();
          return reply;
        } catch (error) {
          if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
          this.#cachedScripts.clear();
          // Calls sent after this one ran before its retry would: a connection's pipelined
          // publishes stored out of order. Refused instead (nothing stored, a retry succeeds).
          if (this.#evalsSent !== sent) throw error;
        }
      }
      this.#evalsSent += 1;
      const reply = (await this.#deadline.bound(this.#client.eval(script.source, options))) as unknown[];
      this.#cachedScripts.add(script.sha);
      this.#health.reachable();
      return reply;
    } catch (error) {
      if (error instanceof Error && /^(ERR|WRONGTYPE)/.test(error.message)) throw error;
      throw this.#health.failed(error);
    }
  }

  /**
   * A script that changes the keyspace's state and refuses to run on a keyspace that lost
   * its data: the seed is loaded again (by this instance or another) and the script runs
   * once more, so a publish that met the loss is stored, not refused.
   */
  async #change(script: RedisScript, args: () => (string | number)[], command?: string): Promise<unknown[]> {
    let reply = await this.#eval(script, args());
    if (reply[0] === 'lost') {
      await this.#follow().catch(() => {});
      reply = await this.#eval(script, args());
    }
    if (reply[0] === 'lost') throw troubleError(this.#health.trouble ?? 'reloading', command);
    if (reply[0] === 'stale') throw new ProtocolError('unavailable', STALE, command);
    return reply;
  }

  async #loadSeed(mode: 'start' | 'replace' | 'reset'): Promise<string> {
    if (mode === 'start') {
      // Most starts find the seed loaded (every instance after the first): say so without
      // sending its posts. The script checks again, for two instances starting at once.
      const [current, seq] = await this.#deadline.bound(this.#client.mGet([this.#key('seed'), this.#key('seq')]));
      if (current === this.#digest && seq !== null) return 'present';
      if (current !== null && current !== this.#digest) return 'mismatch';
      if (this.#started) {
        this.#logger.log('warn', 'the store lost its data: loading the seed again', {
          seedMarker: current === null ? 'gone' : 'kept',
          eventCounter: seq === null ? 'gone' : 'kept',
        });
        this.#health.enter('reloading', 'the seed marker or the event counter is gone');
      }
    }
    const payload = {
      streams: this.#seed.streams.map((stream) => stream.id),
      keys: [...this.#identities].map(([digest, identity]) => [digest, JSON.stringify(identity)]),
    };
    // Each post's JSON in post_json's layout (the script's own): fields in its order, `hidden` last.
    const posts = seedPosts(this.#seed, this.#clock.now()).flatMap((post) => [
      post.streamId,
      post.id,
      JSON.stringify({
        id: post.id,
        streamId: post.streamId,
        streamName: post.streamName,
        text: post.text,
        contentType: post.contentType,
        createdAt: post.createdAt,
        releaseAt: null,
        customTarget: post.customTarget,
        hidden: false,
      }),
    ]);
    const epoch = randomBytes(8).toString('hex');
    const reply = await this.#eval(SCRIPTS.loadSeed, [
      this.#digest,
      mode,
      epoch,
      this.#clock.offsetMs,
      JSON.stringify(payload),
      ...posts,
    ]);
    if (reply[0] !== 'loaded') return reply[0] as string;
    const [, seq, replaced, offset] = reply as [string, number, number, number];
    // Unless its reset event came back first: this load replaced what instances followed, and
    // this one drops it before it answers anything more (the others do as the event reaches
    // them); the event is dispatched here at once, as a publish's is.
    if (this.#epoch !== epoch) {
      const last = this.#lastSeq;
      if (this.#started && (replaced === 1 || (last !== undefined && seq <= last)))
        this.#interrupt('the store lost its data; the seed was loaded again');
      if (this.#lastSeq === undefined || this.#lastSeq === seq - 1)
        this.#dispatch({ s: seq, t: 'reset', e: epoch, o: offset, l: replaced === 1 });
    }
    await this.#awaitSeq(seq);
    return 'loaded';
  }

  #onClientError(error: Error): void {
    // Reported once per outage, not once per reconnection attempt.
    if (!this.#closed) this.#health.enter('unreachable', error.message);
  }

  /** The feed dropped: whatever was published until it is back is missed here. */
  #onFeedLost(error: Error): void {
    if (this.#closed || !this.#feedUp) return;
    this.#feedUp = false;
    this.#interrupt(`lost the store's event feed (${error.message})`);
  }

  /**
   * Once both connections are back (in either order), the feed resumes where Redis stands:
   * a Redis restarted without its data first gets the seed again.
   */
  #resumeFeed(): void {
    if (this.#closed || this.#feedUp || !this.#client.isReady || !this.#subscriber.isReady) return;
    this.#feedUp = true;
    this.#follow().then(
      () => {
        this.#logger.log('info', 'event feed resumed');
        for (const resolve of this.#whenFollowing.splice(0)) resolve();
      },
      (error: unknown) => {
        this.#feedUp = false;
        this.#logger.log('warn', 'event feed not resumed', { reason: (error as Error).message });
      },
    );
  }

  /**
   * Loads the seed again if the keyspace lost it (the same check as at start: one instance
   * loads, the others find it loaded), then follows the feed from where Redis stands. One at
   * a time: every caller meeting the loss meanwhile waits for the same one.
   */
  #follow(): Promise<void> {
    this.#following ??= (async () => {
      try {
        if ((await this.#loadSeed('start')) === 'mismatch')
          this.#logger.log('warn', 'the store holds a different seed: publishes are refused until a restart');
        await this.#catchUp();
        if (this.#health.trouble === 'reloading') this.#health.usable();
      } finally {
        this.#following = undefined;
      }
    })();
    return this.#following;
  }

  /** Whether the store can be used (again): its marker, and a write. One at a time. */
  #probe(): Promise<void> {
    this.#probing ??= (async () => {
      try {
        const [outcome] = await this.#eval(SCRIPTS.probe, [this.#digest]);
        if (outcome === 'lost') await this.#follow();
        else if (outcome === 'ok') this.#health.usable();
      } catch {
        // Still unusable: the failure set the cause; the next probe tries again.
      } finally {
        this.#probing = undefined;
      }
    })();
    return this.#probing;
  }

  #interrupt(reason: string): void {
    this.#lastSeq = undefined;
    this.#logger.log('warn', 'events may have been missed; subscribers must replay', { reason });
    for (const waiter of this.#waiters.splice(0)) waiter.reject(unavailable());
    for (const listener of this.#interruptListeners) listener(reason);
  }

  #onMessage(text: string): void {
    // Every message starts `{"s":<seq>,`: one this instance already dispatched (its own post,
    // sent at its publish's reply) is dropped without parsing it. A reset is always read: a
    // load after a loss numbers its events from 1 again.
    const last = this.#lastSeq;
    const comma = text.indexOf(',', 5);
    const reset = text.startsWith(RESET_TYPE, comma + 1);
    if (!reset && last !== undefined && Number(text.slice(5, comma)) <= last) return;
    const message = JSON.parse(text) as EventMessage;
    if (reset && message.t === 'reset' && this.#resetLost(message, last)) {
      this.#epoch = message.e ?? '';
      this.#interrupt(
        message.s <= (last ?? 0)
          ? `the store's event counter went back from ${last} to ${message.s}; it lost its data`
          : 'the store lost its data; the seed was loaded again',
      );
    } else if (last !== undefined && message.s <= last) return;
    else if (last !== undefined && message.s !== last + 1)
      this.#interrupt(`missed events ${last + 1} to ${message.s - 1}`);
    this.#dispatch(message);
  }

  /** A reset this instance has not seen that replaced what it followed (a load after a loss). */
  #resetLost(message: { s: number; e?: string; l?: boolean }, last: number | undefined): boolean {
    if (last === undefined || (message.e ?? '') === this.#epoch) return false;
    return message.l === true || message.s <= last;
  }

  /** Event `message.s`, the next in order: to the listeners, then to whoever waits for it. */
  #dispatch(message: EventMessage): void {
    this.#lastSeq = message.s;
    switch (message.t) {
      case 'created':
        this.#emit({ type: message.t, post: message.p });
        if (message.p.hidden && message.p.releaseAt !== null) this.#claims.scheduled(message.p.releaseAt, message.p.id);
        break;
      case 'released':
        this.#emit({ type: message.t, post: message.p });
        this.#claims.released(message.p.id);
        if (message.n !== undefined) this.#claims.next(message.n);
        break;
      case 'clock':
        this.#clock.syncOffset(message.o);
        if (message.i !== this.#instanceId) this.#claims.advancedElsewhere();
        break;
      case 'reset':
        if (message.e !== undefined) this.#epoch = message.e;
        if (message.o !== undefined) this.#clock.syncOffset(message.o);
        this.#claims.reset();
        this.catalog.resetSelections();
        break;
      case 'targets':
        this.catalog.setCustomTargets(message.u, message.k, message.v);
        break;
    }
    for (let i = this.#waiters.length - 1; i >= 0; i -= 1) {
      const waiter = this.#waiters[i]!;
      if (waiter.seq <= message.s) {
        this.#waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /**
   * Resolves once this instance has dispatched event `seq`: a publisher's subscribers here
   * get its post before its ack, and history read at `seq` joins the live feed without a
   * gap or a repeat.
   */
  #awaitSeq(seq: number): Promise<void> {
    if (this.#lastSeq !== undefined && this.#lastSeq >= seq) return Promise.resolve();
    if (!this.#feedUp) return Promise.reject(unavailable());
    return new Promise((resolve, reject) => this.#waiters.push({ seq, resolve, reject }));
  }

  /** Claims due releases until none is left (another instance may claim some: each fires once). */
  #releaseDue(): Promise<void> {
    if (this.#releasing) {
      this.#releaseAgain = true;
      return this.#releasing;
    }
    this.#claims.claimStarted();
    this.#releasing = (async () => {
      let seq = 0;
      try {
        do {
          this.#releaseAgain = false;
          let claimed: number;
          do {
            const [count, lastSeq, nextAt, nextId] = await this.#eval(SCRIPTS.releaseDue, [
              this.#clock.now(),
              RELEASE_BATCH,
            ]);
            if (count === 'lost') {
              // Nothing left to release: the seed is loaded again, and what follows starts over.
              void this.#follow().catch(() => {});
              break;
            }
            claimed = count as number;
            seq = lastSeq as number;
            // The earliest pending release as of event `seq`; events this instance dispatched
            // past it (a post hidden since, published elsewhere) already say more.
            if (this.#lastSeq === undefined || this.#lastSeq <= seq)
              this.#claims.next(nextAt === '' ? null : [Number(nextAt), nextId as string]);
          } while (claimed === RELEASE_BATCH);
        } while (this.#releaseAgain);
      } catch (error) {
        // Retried when the client is ready again, and every RELEASE_RETRY_MS meanwhile. A store
        // that cannot be used has said why once (StoreHealth): not again every retry.
        const known = error instanceof ProtocolError && error.code === 'unavailable';
        this.#logger.log(known ? 'debug' : 'warn', 'releases not run', { reason: (error as Error).message });
        this.#releasing = undefined;
        this.#claims.claimEnded(RELEASE_RETRY_MS);
        return;
      }
      this.#releasing = undefined;
      this.#claims.claimEnded();
      await this.#awaitSeq(seq).catch(() => {});
    })();
    return this.#releasing;
  }

  async authenticate(key: string): Promise<Identity | undefined> {
    const digest = sha256(key);
    const found = await this.#command(this.#client.hGet(this.#key('keys'), digest));
    if (found !== null) return JSON.parse(found) as Identity;
    // A key of the seed the keyspace does not know: its key table is gone (a loss). The key
    // is answered from the seed, which the keyspace is tied to, and the seed loaded again.
    const identity = this.#identities.get(digest);
    if (identity !== undefined) void this.#probe();
    return identity;
  }

  async publish(request: PublishRequest): Promise<PublishResult> {
    const stream = this.catalog.streams.get(request.streamId);
    if (!stream) throw new RangeError(`unknown stream ${request.streamId}`);
    const now = this.#clock.now();
    const keyed = request.idempotencyKey !== null && this.#windowMs > 0;
    const reply = await this.#change(
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
      ],
      PUBLISH_COMMAND,
    );
    const outcome = reply[0] as string;
    if (outcome === 'limit')
      throw holdingsError(reply[1] as Parameters<typeof holdingsError>[0], stream.id, reply[2] as number);
    // Stored: Redis takes writes (again, after being full).
    this.#health.usable();
    const post = JSON.parse(reply[1] as string) as PostRecord;
    if (outcome === 'duplicate') return { post, duplicate: true };
    const seq = reply[2] as number;
    // This instance claims the release on time; the others only if it does not.
    if (post.hidden) this.#claims.published(post.id);
    // Nothing comes before it that this instance has not dispatched: its subscribers get it now,
    // not once Redis echoes it on the feed (the echo is then dropped as already seen).
    if (this.#feedUp && this.#lastSeq === seq - 1) this.#dispatch({ s: seq, t: 'created', p: post });
    // The post is stored: if the feed drops before its event comes back, the publisher still
    // gets its ack, and this instance's subscribers, closed for the gap, replay it.
    else await this.#awaitSeq(seq).catch(() => {});
    return { post, duplicate: false };
  }

  async setCustomTargets(userId: string, streamId: string, targets: readonly string[]): Promise<void> {
    const [, seq] = await this.#change(SCRIPTS.setTargets, () => [
      this.#digest,
      userId,
      streamId,
      JSON.stringify(targets),
    ]);
    // Stored: a feed that drops before the event returns re-reads every selection as it resumes.
    await this.#awaitSeq(seq as number).catch(() => {});
  }

  async caughtUp(): Promise<void> {
    const seq = await this.#command(this.#client.get(this.#key('seq')));
    await this.#awaitSeq(Number(seq ?? 0));
  }

  /** Resolves once this instance reaches Redis and follows its events (again, after an outage). */
  following(): Promise<void> {
    if (this.#feedUp && this.#lastSeq !== undefined && this.#client.isReady) return Promise.resolve();
    return new Promise((resolve) => this.#whenFollowing.push(resolve));
  }

  position(): number | undefined {
    return this.#lastSeq;
  }

  async recent(streamId: string, limit: number, asOf?: number): Promise<PostRecord[]> {
    if (!this.catalog.streams.has(streamId)) return [];
    const [seq, ...posts] = await this.#eval(SCRIPTS.recent, [streamId, Math.min(limit, MAX_LAST_POSTS), asOf ?? '']);
    await this.#awaitSeq(seq as number);
    return posts.map((json) => JSON.parse(json as string) as PostRecord);
  }

  onEvent(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onInterrupted(listener: (reason: string) => void): () => void {
    this.#interruptListeners.add(listener);
    return () => this.#interruptListeners.delete(listener);
  }

  async advanceClock(ms: number): Promise<void> {
    const [, seq] = await this.#change(SCRIPTS.advanceClock, () => [ms, this.#instanceId]);
    await this.#awaitSeq(seq as number);
    await this.#releaseDue();
  }

  async stats(): Promise<StoreStats> {
    const [posts, scheduledReleases, idempotencyKeys] = await this.#eval(SCRIPTS.stats, [this.#clock.now()]);
    return {
      posts: posts as number,
      scheduledReleases: scheduledReleases as number,
      idempotencyKeys: idempotencyKeys as number,
    };
  }

  async reset(): Promise<void> {
    if ((await this.#loadSeed('reset')) === 'mismatch') throw new ProtocolError('unavailable', STALE);
  }

  /** Why the store cannot be used now (`GET /readyz`), or undefined when it can. */
  unusable(): Unusable | undefined {
    const trouble =
      this.#health.trouble ??
      (this.#feedUp && this.#lastSeq !== undefined && this.#client.isReady ? undefined : 'unreachable');
    return trouble === undefined ? undefined : { reason: trouble, message: troubleError(trouble).message };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopClock();
    this.#deadline.close();
    this.#health.close();
    this.#claims.close();
    this.#listeners.clear();
    this.#interruptListeners.clear();
    for (const waiter of this.#waiters.splice(0)) waiter.reject(unavailable());
    for (const client of [this.#subscriber, this.#client]) {
      if (client.isReady) await client.close().catch(() => client.destroy());
      else if (client.isOpen) client.destroy();
    }
  }
}
