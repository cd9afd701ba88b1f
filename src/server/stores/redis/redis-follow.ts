// Keeping one instance of the Redis store in step with the keyspace: the seed loaded once for
// every instance (and again after a loss), the event feed followed from where Redis stands (at
// start, and again after an outage), the store probed while it cannot be used, and a change
// that met a loss sent once more. What each operation asks of the keyspace is redis-store.ts's.
import { randomBytes } from 'node:crypto';
import { ProtocolError } from '../../../protocol/errors.js';
import type { Seed } from '../../../protocol/seed.js';
import type { AdjustableClock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import type { Catalog } from '../seed-catalog.js';
import { StoreError } from '../store-error.js';
import type { Identity } from '../store.js';
import { checkRedisConfig } from './redis-config.js';
import type { EvictionWatch } from './redis-eviction.js';
import { unavailable, type EventFeed } from './redis-feed.js';
import { eventsChannel } from './redis-keys.js';
import type { RedisLink } from './redis-link.js';
import type { RedisReleases } from './redis-releases.js';
import { SCRIPTS, type RedisScript } from './redis-scripts.js';
import { seedLoadArgs, selectionsOf } from './redis-seed.js';
import type { StoreHealth } from './store-health.js';

export const STALE = 'the store now holds a different seed; this instance must be restarted';

/** The Redis store's parts the follower works with. */
export interface FollowerParts {
  link: RedisLink;
  feed: EventFeed;
  health: StoreHealth;
  eviction: EvictionWatch;
  releases: RedisReleases;
  clock: AdjustableClock;
  /** The store's copy of the seed's users and streams, whose selections follow the keyspace's. */
  catalog: Catalog;
  logger: Logger;
  prefix: string;
  seed: Seed;
  digest: string;
  /** The seed's keys, as loaded into the keyspace. */
  identities: Map<string, Identity>;
}

/** One instance kept in step with the keyspace, at start and after an outage or a loss. */
export class KeyspaceFollower {
  readonly #link: RedisLink;
  readonly #feed: EventFeed;
  readonly #health: StoreHealth;
  readonly #eviction: EvictionWatch;
  readonly #releases: RedisReleases;
  readonly #clock: AdjustableClock;
  readonly #catalog: Catalog;
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #seed: Seed;
  readonly #digest: string;
  readonly #identities: Map<string, Identity>;
  readonly #whenFollowing: (() => void)[] = [];
  /** Loading the seed again and following the feed from there, after an outage or a loss. */
  #following: Promise<void> | undefined;
  #probing: Promise<void> | undefined;
  /** Whether the first connection was followed from (later ones are reconnections). */
  started = false;
  /** Set as the store closes: what fails from then on is not reported. */
  closed = false;

  constructor(parts: FollowerParts) {
    this.#link = parts.link;
    this.#feed = parts.feed;
    this.#health = parts.health;
    this.#eviction = parts.eviction;
    this.#releases = parts.releases;
    this.#clock = parts.clock;
    this.#catalog = parts.catalog;
    this.#logger = parts.logger;
    this.#prefix = parts.prefix;
    this.#seed = parts.seed;
    this.#digest = parts.digest;
    this.#identities = parts.identities;
  }

  /** Connects, checks Redis's settings, subscribes to the feed, loads the seed (or finds it loaded) and catches up. */
  async start(resetStore: boolean, allowEviction: boolean): Promise<void> {
    const { client, subscriber, deadline } = this.#link;
    await client.connect();
    this.#health.policy = await checkRedisConfig(client, { allowEviction, logger: this.#logger });
    await this.#link.readClock();
    // Where `evicted_keys` stands, so that only keys evicted from now on count as a loss.
    await this.#eviction.check();
    await subscriber.connect();
    await deadline.bound(subscriber.subscribe(eventsChannel(this.#prefix), (message) => this.#feed.onMessage(message)));
    this.#feed.up = true;
    const loaded = await this.loadSeed(resetStore ? 'replace' : 'start');
    if (loaded === 'mismatch') {
      throw new StoreError(
        'store-seed-mismatch',
        `the Redis keyspace "${this.#prefix}" holds a different seed: replace it and all its posts with --reset-store (resetStore), or use another --redis-prefix (redisPrefix)`,
      );
    }
    await this.#catchUp();
    this.started = true;
  }

  /** Where the feed stands, the shared clock, and releases that fell due while nobody watched. */
  async #catchUp(): Promise<void> {
    // Sent in this order on one connection: selections read after `seq` are at least as new as it.
    const { client } = this.#link;
    const [seq, offset, targets, epoch] = await this.#link.deadline.bound(
      Promise.all([
        client.get(this.#key('seq')),
        client.get(this.#key('clock')),
        client.hGetAll(this.#key('targets')),
        client.get(this.#key('epoch')),
      ]),
    );
    this.#feed.standsAt(Number(seq ?? 0), epoch ?? '');
    this.#clock.syncOffset(Number(offset ?? 0));
    this.#catalog.resetSelections(selectionsOf(targets));
    await this.#releases.run();
  }

  /**
   * A script that changes the keyspace's state and refuses to run on a keyspace that lost
   * its data: the seed is loaded again (by this instance or another) and the script runs
   * once more, so a publish that met the loss is stored, not refused.
   */
  async change(
    script: RedisScript,
    args: () => (string | number)[],
    command?: string,
    send: (script: RedisScript, args: (string | number)[]) => Promise<unknown[]> = (...call) =>
      this.#link.eval(...call),
  ): Promise<unknown[]> {
    const sendOnce = async (): Promise<unknown[]> => {
      try {
        return await send(script, args());
      } catch (error) {
        if (!(error instanceof ProtocolError) || this.#health.trouble !== 'out-of-memory') throw error;
        // The policy under which Redis is full is read now: the refusal names it, not the one of start.
        await this.#eviction.check();
        throw this.#health.refusal('out-of-memory', command);
      }
    };
    let reply = await sendOnce();
    if (reply[0] === 'lost') {
      await this.follow().catch(() => {});
      reply = await sendOnce();
    }
    if (reply[0] === 'lost') throw this.#health.refusal(this.#health.trouble ?? 'reloading', command);
    if (reply[0] === 'stale') throw new ProtocolError('unavailable', STALE, command);
    return reply;
  }

  async loadSeed(mode: 'start' | 'replace' | 'reset'): Promise<string> {
    if (mode === 'start') {
      // Most starts find the seed loaded (every instance after the first): say so without
      // sending its posts. The script checks again, for two instances starting at once.
      const [current, seq] = await this.#link.deadline.bound(
        this.#link.client.mGet([this.#key('seed'), this.#key('seq')]),
      );
      if (current === this.#digest && seq !== null) return 'present';
      if (current !== null && current !== this.#digest) return 'mismatch';
      if (this.started) {
        this.#logger.log('warn', 'the store lost its data: loading the seed again', {
          seedMarker: current === null ? 'gone' : 'kept',
          eventCounter: seq === null ? 'gone' : 'kept',
        });
        this.#health.enter('reloading', 'the seed marker or the event counter is gone');
      }
    }
    const epoch = randomBytes(8).toString('hex');
    const reply = await this.#link.eval(SCRIPTS.loadSeed, [
      this.#digest,
      mode,
      epoch,
      this.#clock.offsetMs,
      ...seedLoadArgs(this.#seed, this.#identities, this.#clock.now()),
    ]);
    if (reply[0] !== 'loaded') return reply[0] as string;
    const [, seq, replaced, offset] = reply as [string, number, number, number];
    // Unless its reset event came back first: this load replaced what instances followed, and
    // this one drops it before it answers anything more (the others do as the event reaches
    // them); the event is dispatched here at once, as a publish's is.
    const feed = this.#feed;
    if (feed.epoch !== epoch) {
      const last = feed.lastSeq;
      if (this.started && (replaced === 1 || (last !== undefined && seq <= last)))
        feed.interrupt('the store lost its data; the seed was loaded again');
      if (feed.lastSeq === undefined || feed.lastSeq === seq - 1)
        feed.dispatch({ s: seq, t: 'reset', e: epoch, o: offset, l: replaced === 1 });
    }
    await feed.awaitSeq(seq);
    return 'loaded';
  }

  onClientError(error: Error): void {
    // Reported once per outage, not once per reconnection attempt.
    if (!this.closed) this.#health.enter('unreachable', error.message);
  }

  /** The feed dropped: whatever was published until it is back is missed here. */
  onFeedLost(error: Error): void {
    if (this.closed || !this.#feed.up) return;
    this.#feed.up = false;
    this.#feed.interrupt(`lost the store's event feed (${error.message})`, unavailable());
  }

  /**
   * Once both connections are back (in either order), the feed resumes where Redis stands:
   * a Redis restarted without its data first gets the seed again.
   */
  resumeFeed(): void {
    if (this.closed || this.#feed.up || !this.#link.ready) return;
    this.#feed.up = true;
    this.follow().then(
      () => {
        this.#logger.log('info', 'event feed resumed');
        for (const resolve of this.#whenFollowing.splice(0)) resolve();
      },
      (error: unknown) => {
        this.#feed.up = false;
        this.#logger.log('warn', 'event feed not resumed', { reason: (error as Error).message });
      },
    );
  }

  /**
   * Loads the seed again if the keyspace lost it (the same check as at start: one instance
   * loads, the others find it loaded), then follows the feed from where Redis stands. One at
   * a time: every caller meeting the loss meanwhile waits for the same one.
   */
  follow(): Promise<void> {
    this.#following ??= (async () => {
      try {
        if ((await this.loadSeed('start')) === 'mismatch')
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
  probe(): Promise<void> {
    this.#probing ??= (async () => {
      try {
        const [outcome] = await this.#link.eval(SCRIPTS.probe, [this.#digest]);
        if (outcome === 'lost') await this.follow();
        else if (outcome === 'ok') this.#health.usable();
      } catch {
        // Still unusable: the failure set the cause; the next probe tries again.
      } finally {
        this.#probing = undefined;
      }
    })();
    return this.#probing;
  }

  /** Resolves once this instance reaches Redis and follows its events (again, after an outage). */
  following(): Promise<void> {
    if (this.#feed.following && this.#link.client.isReady) return Promise.resolve();
    return new Promise((resolve) => this.#whenFollowing.push(resolve));
  }

  #key(name: string): string {
    return this.#prefix + name;
  }
}
