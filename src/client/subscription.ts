import type { ServerMessage } from '../protocol/events.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { Post, SubscribeCommandName } from '../protocol/types.js';
import {
  Connection,
  type ConnectionLike,
  type ConnectionOptions,
  type ConnectionState,
  type OpenConnection,
  type ReadyInfo,
} from './connection.js';
import { ClientError } from './errors.js';
import { isTreeFeed } from './endpoint.js';
import { SeenPosts } from './seen.js';
import { serviceTimeMs } from './service-time.js';

export interface SubscriptionOptions {
  command: SubscribeCommandName;
  /** Undefined: every stream the user follows or owns. */
  streamIds: string[] | undefined;
  lastPosts: number;
  /** On a share of a tree feed connection (…/graphql?format=tree), where connecting was subscribing. */
  treeFeed?: boolean;
}

/**
 * A post ready to show: first sight (`created`) or its content becoming visible (`released`).
 * `history`: one of the recent posts asked for with `lastPosts` on the first subscription, not a live one.
 */
export type Delivery =
  | { format: 'post'; kind: 'created' | 'released'; history: boolean; post: Post }
  | { format: 'tree'; kind: 'created' | 'released'; history: boolean; item: Record<string, unknown>; id: string };

export interface SubscriptionHandlers {
  onDelivery(delivery: Delivery): void;
  onSubscribed?(ack: { streamIds: string[]; lastPosts: number; reconnected: boolean }): void;
  onState?(state: ConnectionState): void;
}

const SEEN_BASE = 10_000;
/**
 * The ids a subscription remembers, in bytes (each id's length plus its entry's cost): with
 * ids of at most MAX_POST_ID_BYTES, at least 40,000 of them, whatever a service sends.
 */
const SEEN_MAX_BYTES = 8 * 1024 * 1024;
/**
 * How much older than the newest post seen before a drop a post of the replay may be and
 * still count as new: instances of one service whose clocks differ by up to this much.
 */
export const REPLAY_SKEW_MS = 5_000;
/** The most history held (in UTF-16 units of its frames) before it is shown, however it ends. */
const HISTORY_MAX_UNITS = 8 * 1024 * 1024;
const SUBSCRIBE_ID = 'subscribe';
/** Refusals that say "not now" rather than "never". */
const PASSING_REFUSALS: ReadonlySet<string> = new Set(['unavailable', 'internal', 'rate-limited']);
/** The requestIds a subscription sends: whoever shares its connection can tell its replies by them. */
export const SUBSCRIPTION_REQUEST_IDS: ReadonlySet<string> = new Set([SUBSCRIBE_ID]);
/**
 * From a service that does not say how much history follows, the history is shown once this
 * long passed without another history post (or a live post ended it sooner). It decides only
 * when history is printed, never whether a post is history.
 */
export const HISTORY_QUIET_MS = 500;

/** The later of a post's creation and its release (epoch ms or ISO), NaN when neither is known. */
function visibleAt(createdAt: number, releaseAt: string | number | null): number {
  const released = typeof releaseAt === 'string' ? Date.parse(releaseAt) : (releaseAt ?? Number.NaN);
  return Number.isNaN(released) ? createdAt : Number.isNaN(createdAt) ? released : Math.max(createdAt, released);
}

type Candidate = {
  streamKey: string;
  /** The frame's length: what holding it costs. */
  size: number;
  hidden: boolean;
  id: string;
  released: boolean;
  /** Epoch ms of creation on the service's clock; NaN when the message does not say. */
  createdAt: number;
  /**
   * When its content became visible (service clock): its release for a released post, else
   * its creation. A post hidden until a release in an outage is new then, however old.
   */
  visibleAt: number;
  make: (kind: Delivery['kind'], history: boolean) => Delivery;
};

/** Where the first history ends when `sub_ack` does not say (`history`): by the posts' creation times. */
interface HistoryByClock {
  /** When the subscribe was sent, on the service's clock when known. */
  cutoff: number;
  /** History posts counted per stream: at most the `lastPosts` asked for. */
  counts: Map<string, number>;
  /** History posts still allowed in all: what was asked for, over the streams acknowledged. */
  left: number;
}

/**
 * A subscription that outlives its connection. One subscribe command per connection,
 * sent as soon as the socket is open.
 *
 * To know later what is new, it first learns what already exists: the first
 * subscription asks for the last 100 posts of each stream (the most the
 * service keeps). The acknowledgement says how many history posts follow it
 * (`history`). From a service that does not say, the history is the run of posts
 * right after the acknowledgement created before the subscribe was sent (on the
 * service's clock when `connected.serverTime` gave it, else this machine's), at most
 * 100 per stream: the first post that is not older ends it, and it and everything
 * after it are live. It remembers every id and shows only the last `lastPosts` of
 * each stream. After a reconnect it asks for the last 100 posts again; of that replay
 * it shows the ones it has not seen, by id, created after the newest post it saw
 * before the drop (less REPLAY_SKEW_MS, for instances whose clocks differ) or after
 * it last heard from the service (when `connected.serverTime` gave the service's
 * clock): the posts from the outage, never older ones, even from a service that
 * restarted meanwhile with other posts. A hidden post whose release happened during
 * the outage is shown as released.
 *
 * What the service answers is checked: a `sub_ack` for other streams, or with a
 * `lastPosts` over what was asked for, ends the subscription (`refused`, code
 * `unexpected-reply`) rather than drop posts in silence (a smaller `lastPosts` is the
 * service's own cap); a `history` count that is not a whole number within what was
 * asked for is ignored (the creation times decide).
 */
export class Subscription {
  readonly connection: ConnectionLike;
  readonly #seen = new SeenPosts(SEEN_BASE, SEEN_MAX_BYTES);
  /** The first history, held until its end is known; then the last `lastPosts` of each stream are shown. */
  #history: Candidate[] | undefined;
  /** History posts still to come, when the service said how many follow its acknowledgement. */
  #historyLeft: number | undefined;
  #byClock: HistoryByClock | undefined;
  #historyTimer: NodeJS.Timeout | undefined;
  #sentAt = 0;
  /** The service's clock minus this machine's, from `connected.serverTime`. */
  #clockOffset = 0;
  /** Whether `#clockOffset` came from the service (else the clocks are taken to agree). */
  #offsetKnown = false;
  /** Units of the frames held in `#history`. */
  #historyUnits = 0;
  /** When the newest post seen became visible (service clock): created, or released. */
  #newestSeen = Number.NEGATIVE_INFINITY;
  /** When this machine last heard from the service. */
  #lastHeard = Number.NEGATIVE_INFINITY;
  /** The streams the latest `connected` said the key follows, when it named any. */
  #followed: ReadonlySet<string> | undefined;
  /** During the replay after a reconnect: the creation time from which an unseen post is new. */
  #replayCutoff: number | undefined;
  #reconnected = false;
  #everSubscribed = false;
  #streamIds: string[] = [];
  readonly #treeFeed: boolean;
  #subscribeAnswered: (() => void) | undefined;

  constructor(
    connection: ConnectionOptions | OpenConnection,
    private readonly options: SubscriptionOptions,
    private readonly handlers: SubscriptionHandlers,
  ) {
    const treeFeed = typeof connection === 'function' ? options.treeFeed === true : isTreeFeed(connection.endpoint);
    if (treeFeed && (options.command !== 'on-stream-post-tree' || options.streamIds !== undefined)) {
      throw new ClientError(
        'usage',
        'a tree feed address (…/graphql?format=tree) gives tree items of the streams named in its URL: use tree, and put streamIds in the URL',
      );
    }
    this.#treeFeed = treeFeed;
    const connectionHandlers = {
      onState: (state: ConnectionState) => handlers.onState?.(state),
      onReady: (info: ReadyInfo) => this.#subscribe(info),
      onMessage: (message: ServerMessage, raw: string) => this.#receive(message, raw),
    };
    this.connection =
      typeof connection === 'function'
        ? connection(connectionHandlers)
        : new Connection(connection, connectionHandlers);
  }

  start(): Promise<void> {
    this.connection.start();
    return this.connection.done.finally(() => clearTimeout(this.#historyTimer));
  }

  close(): Promise<void> {
    clearTimeout(this.#historyTimer);
    return this.connection.close();
  }

  #subscribe(info: ReadyInfo): void {
    if (this.#treeFeed) {
      // Connecting was subscribing; items are shown as they come, each _id once.
      if (!info.reconnected) this.#announce();
      return;
    }
    this.#historyLeft = undefined;
    this.#byClock = undefined;
    clearTimeout(this.#historyTimer);
    // A drop before the first history was complete leaves nothing known: start over.
    const learning = !info.reconnected || this.#history !== undefined;
    this.#reconnected = !learning;
    this.#historyUnits = 0;
    this.#followed = undefined;
    if (learning) this.#history = [];
    else {
      const heard = this.#offsetKnown ? this.#lastHeard + this.#clockOffset : Number.NEGATIVE_INFINITY;
      this.#replayCutoff = Math.max(this.#newestSeen, heard) - REPLAY_SKEW_MS;
    }
    this.#sentAt = Date.now();
    const streamFilter = this.options.streamIds !== undefined ? { streamIds: this.options.streamIds.join(',') } : {};
    if (
      this.connection.send({
        event: this.options.command,
        data: { ...streamFilter, lastPosts: MAX_LAST_POSTS },
        requestId: SUBSCRIBE_ID,
      })
    ) {
      this.#subscribeAnswered = this.connection.expectReply(`sub_ack (the reply to ${this.options.command})`);
    }
  }

  /** The streams named in the subscribe; undefined for every stream followed (none named). */
  #asked(): readonly string[] | undefined {
    const asked = this.options.streamIds;
    return asked !== undefined && asked.length > 0 ? asked : undefined;
  }

  /** What is wrong with an acknowledgement, in words naming what the service answered; undefined when nothing is. */
  #unexpectedAck(streamIds: readonly string[], lastPosts: number | undefined): string | undefined {
    const asked = this.#asked();
    const named = (ids: readonly string[]) =>
      ids
        .slice(0, 10)
        .map((id) => JSON.stringify(id))
        .join(', ') + (ids.length > 10 ? `, … (${ids.length} in all)` : '');
    if (asked !== undefined) {
      // Posts are routed by the streams acknowledged: an acknowledgement of none would drop them all.
      if (streamIds.length === 0)
        return `the service acknowledged a subscription to no streams (no streamIds), not to the streams asked for (${named(asked)})`;
      const wanted = new Set(asked);
      if (streamIds.length !== wanted.size || !streamIds.every((id) => wanted.has(id)))
        return `the service acknowledged a subscription to ${named(streamIds)}, not to the streams asked for (${named(asked)})`;
    }
    // Every stream followed: those the service named in `connected` on this connection, when it did.
    const followed = this.#followed;
    if (asked === undefined && followed !== undefined) {
      const others = streamIds.filter((id) => !followed.has(id));
      if (others.length > 0)
        return `the service acknowledged a subscription to ${named(others)}, not among the streams it said the key follows (${named([...followed])})`;
    }
    // Fewer is a service's own cap (a shorter history); more, or not a count, was not asked for.
    if (lastPosts !== undefined && !(Number.isInteger(lastPosts) && lastPosts >= 0 && lastPosts <= MAX_LAST_POSTS))
      return `the service acknowledged lastPosts ${String(lastPosts)}, more than the ${MAX_LAST_POSTS} asked for`;
    return undefined;
  }

  /** The service's clock from its `connected`, when it said a time within reason. */
  #learnClock(serverTime: string | undefined): void {
    const localNow = Date.now();
    const serverNow = serviceTimeMs(serverTime, localNow);
    if (serverNow === undefined) return;
    this.#clockOffset = serverNow - localNow;
    this.#offsetKnown = true;
  }

  #receive(message: ServerMessage, raw: string): void {
    this.#lastHeard = Date.now();
    switch (message.kind) {
      case 'connected':
        this.#followed = message.streams.length > 0 ? new Set(message.streams) : undefined;
        this.#learnClock(message.serverTime);
        return;
      case 'sub_ack': {
        this.#subscribeAnswered?.();
        const unexpected = this.#unexpectedAck(message.streamIds, message.lastPosts);
        if (unexpected !== undefined) {
          this.connection.fail(new ClientError('refused', `unexpected-reply: ${unexpected}`, 'unexpected-reply'));
          return;
        }
        this.#everSubscribed = true;
        this.#seen.ensureCapacity(SEEN_BASE + MAX_LAST_POSTS * 2 * message.streamIds.length);
        this.#streamIds = message.streamIds;
        // At most what was asked for (or the fewer the service acknowledged) a stream, over the
        // streams named (or acknowledged, for all of them).
        const most =
          (message.lastPosts ?? MAX_LAST_POSTS) * Math.max(1, this.#asked()?.length ?? message.streamIds.length);
        const history =
          message.history !== undefined && message.history >= 0 && message.history <= most
            ? message.history
            : undefined;
        if (!this.#history) this.#announce();
        if (history === undefined) {
          this.#byClock = { cutoff: this.#sentAt + this.#clockOffset, counts: new Map(), left: most };
          if (this.#history) this.#armHistoryTimer();
        } else if (history === 0) this.#endHistory();
        else this.#historyLeft = history;
        return;
      }
      case 'error':
        if (
          message.requestId === SUBSCRIBE_ID ||
          (message.requestId === undefined && message.command === this.options.command)
        ) {
          const why = `the service refused the subscription: ${message.code}: ${message.message}`;
          // Accepted before, refused now for a passing reason (its store is back but not caught up,
          // say): a reconnect with backoff asks again; refused from the start, it never will be.
          if (this.#everSubscribed && PASSING_REFUSALS.has(message.code)) this.connection.drop(why);
          else this.connection.fail(new ClientError('refused', why, message.code));
        }
        return;
      case 'post': {
        if (this.options.command !== 'on-stream-post') return;
        const { post } = message;
        this.#offer({
          streamKey: post.streamId,
          size: raw.length,
          hidden: post.hidden,
          id: post.id,
          released: message.released,
          createdAt: Date.parse(post.createdAt),
          visibleAt: visibleAt(Date.parse(post.createdAt), post.hidden ? null : post.releaseAt),
          make: (kind, history) => ({ format: 'post', kind, history, post }),
        });
        return;
      }
      case 'tree': {
        if (this.options.command !== 'on-stream-post-tree') return;
        const item = message.item as unknown as Record<string, unknown>;
        const id = String(item['_id']);
        // The hosted service's items name their stream by title only.
        const streamKey =
          [item['streamId'], item['source'], item['title']].find((key) => typeof key === 'string') ?? '';
        this.#offer({
          streamKey,
          size: raw.length,
          hidden: item['hidden'] === true,
          id,
          released: false,
          createdAt: typeof item['time'] === 'number' ? item['time'] : Number.NaN,
          visibleAt: visibleAt(
            typeof item['time'] === 'number' ? item['time'] : Number.NaN,
            item['hidden'] !== true && typeof item['releaseAt'] === 'number' ? item['releaseAt'] : null,
          ),
          make: (kind, history) => ({ format: 'tree', kind, history, item, id }),
        });
        return;
      }
      default:
        return;
    }
  }

  #armHistoryTimer(): void {
    clearTimeout(this.#historyTimer);
    this.#historyTimer = setTimeout(() => this.#showHistory(), HISTORY_QUIET_MS);
  }

  /** By creation time: whether a post continues the run of history (and counts it). */
  #continuesHistory(byClock: HistoryByClock, candidate: Candidate): boolean {
    const count = byClock.counts.get(candidate.streamKey) ?? 0;
    if (!(candidate.createdAt < byClock.cutoff) || count >= MAX_LAST_POSTS || byClock.left === 0) return false;
    byClock.counts.set(candidate.streamKey, count + 1);
    byClock.left -= 1;
    return true;
  }

  /** Whether a post is one of the history (or replay) that follows the acknowledgement; counts it. */
  #inHistory(candidate: Candidate): boolean {
    const byClock = this.#byClock;
    if (byClock) {
      if (this.#continuesHistory(byClock, candidate)) return true;
      this.#endHistory();
      return false;
    }
    if (this.#historyLeft === undefined) return false;
    this.#historyLeft -= 1;
    return true;
  }

  #offer(candidate: Candidate): void {
    if (this.#inHistory(candidate)) {
      if (this.#history) {
        this.#history.push(candidate);
        this.#historyUnits += candidate.size;
        if (this.#byClock) this.#armHistoryTimer();
      } else if (this.#replayCutoff !== undefined) {
        const kind = this.#admitReplayed(candidate);
        if (kind) this.handlers.onDelivery(candidate.make(kind, false));
      } else {
        // Shown already for a pause in the history: a later history post is newer than those.
        const kind = this.#admit(candidate);
        if (kind && this.options.lastPosts > 0) this.handlers.onDelivery(candidate.make(kind, true));
      }
      if (this.#historyLeft === 0) this.#endHistory();
      // Shown early rather than held without bound; later history posts are still history.
      else if (this.#historyUnits > HISTORY_MAX_UNITS) this.#showHistory();
      return;
    }
    const kind = this.#admit(candidate);
    if (kind) this.handlers.onDelivery(candidate.make(kind, false));
  }

  /** The history (or the replay) that follows an acknowledgement is over. */
  #endHistory(): void {
    this.#byClock = undefined;
    this.#historyLeft = undefined;
    this.#replayCutoff = undefined;
    this.#showHistory();
  }

  /**
   * A post of the replay after a reconnect: new only when unseen and created after what
   * was seen before the drop; remembered either way, so it is never shown later.
   */
  #admitReplayed(candidate: Candidate): Delivery['kind'] | undefined {
    const unseen = this.#seen.get(candidate.id) === undefined;
    if (unseen && !(candidate.visibleAt >= this.#replayCutoff!)) {
      this.#seen.mark(candidate.id, candidate.hidden ? 'hidden' : 'visible');
      return undefined;
    }
    return this.#admit(candidate);
  }

  #announce(): void {
    this.handlers.onSubscribed?.({
      streamIds: this.#streamIds,
      lastPosts: this.options.lastPosts,
      reconnected: this.#reconnected,
    });
  }

  /** The first history is all remembered; only the last `lastPosts` of each stream are shown. */
  #showHistory(): void {
    clearTimeout(this.#historyTimer);
    const history = this.#history;
    this.#history = undefined;
    this.#historyUnits = 0;
    if (!history) return;
    this.#announce();
    const remaining = new Map<string, number>();
    for (const candidate of history) remaining.set(candidate.streamKey, (remaining.get(candidate.streamKey) ?? 0) + 1);
    for (const candidate of history) {
      const left = remaining.get(candidate.streamKey)!;
      remaining.set(candidate.streamKey, left - 1);
      const kind = this.#admit(candidate);
      if (kind && left <= this.options.lastPosts) this.handlers.onDelivery(candidate.make(kind, true));
    }
  }

  /** Decides whether a post frame shows something new, and as what; remembers it either way. */
  #admit({ id, hidden, released, visibleAt }: Candidate): Delivery['kind'] | undefined {
    if (visibleAt > this.#newestSeen) this.#newestSeen = visibleAt;
    const shown = this.#seen.get(id);
    if (shown === 'visible') return undefined;
    if (hidden) {
      if (shown === 'hidden') return undefined;
      this.#seen.mark(id, 'hidden');
      return 'created';
    }
    this.#seen.mark(id, 'visible');
    return shown === 'hidden' || released ? 'released' : 'created';
  }
}
