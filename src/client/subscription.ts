import type { ServerMessage } from '../protocol/events.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { Post, SubscribeCommandName } from '../protocol/types.js';
import { Connection, type ConnectionOptions, type ConnectionState, type ReadyInfo } from './connection.js';
import { ClientError } from './errors.js';
import { SeenPosts } from './seen.js';

export interface SubscriptionOptions {
  command: SubscribeCommandName;
  /** Undefined: every stream the user follows or owns. */
  streamIds: string[] | undefined;
  lastPosts: number;
}

/** A post ready to show: first sight (`created`) or its content becoming visible (`released`). */
export type Delivery =
  | { format: 'post'; kind: 'created' | 'released'; post: Post; raw: string }
  | { format: 'tree'; kind: 'created' | 'released'; item: Record<string, unknown>; id: string; raw: string };

export interface SubscriptionHandlers {
  onDelivery(delivery: Delivery): void;
  onSubscribed?(ack: { streamIds: string[]; lastPosts: number; reconnected: boolean }): void;
  onState?(state: ConnectionState): void;
  /** Any post frame arrived, shown or not (idle timers listen to this). */
  onActivity?(): void;
}

const SEEN_BASE = 10_000;
// A post created this long before the newest one seen may still be arriving
// late (publishes race), so the replay after a reconnect does not cut it off.
const REPLAY_SLACK_MS = 1_000;
// With nothing seen yet, the replay is cut at the first connection by the
// local clock, allowing this much difference between the clocks.
const CLOCK_SKEW_MS = 5_000;

function timeOf(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e12 ? value * 1000 : value;
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

/**
 * A subscription that outlives its connection. After a reconnect it asks for
 * the last 100 posts of each stream again, and shows only what it has not
 * shown: posts it has seen are dropped by id, and posts older than anything it
 * had seen (the history before it started) are dropped by time. A hidden post
 * whose release happened during the outage is shown as released.
 */
export class Subscription {
  readonly connection: Connection;
  readonly #seen = new SeenPosts(SEEN_BASE);
  #newestSeen: number | undefined;
  #firstReadyAt: number | undefined;
  #replaying = false;

  constructor(
    connectionOptions: ConnectionOptions,
    private readonly options: SubscriptionOptions,
    private readonly handlers: SubscriptionHandlers,
    private readonly now: () => number = Date.now,
  ) {
    this.connection = new Connection(connectionOptions, {
      onState: (state) => handlers.onState?.(state),
      onReady: (info) => this.#subscribe(info),
      onMessage: (message, raw) => this.#receive(message, raw),
    });
  }

  start(): Promise<void> {
    this.connection.start();
    return this.connection.done;
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  #subscribe(info: ReadyInfo): void {
    this.#firstReadyAt ??= this.now();
    this.#replaying = info.reconnected;
    const data: Record<string, unknown> = {
      lastPosts: info.reconnected ? MAX_LAST_POSTS : this.options.lastPosts,
    };
    if (this.options.streamIds !== undefined) data['streamIds'] = this.options.streamIds.join(',');
    this.connection.send({ event: this.options.command, data, requestId: 'subscribe' });
  }

  #receive(message: ServerMessage, raw: string): void {
    switch (message.kind) {
      case 'sub_ack':
        this.#seen.ensureCapacity(SEEN_BASE + MAX_LAST_POSTS * 2 * message.streamIds.length);
        this.handlers.onSubscribed?.({ streamIds: message.streamIds, lastPosts: message.lastPosts, reconnected: this.#replaying });
        return;
      case 'error':
        if (message.command === this.options.command || message.requestId === 'subscribe') {
          this.connection.fail(new ClientError('refused', `the service refused the subscription: ${message.code}: ${message.message}`, message.code));
        }
        return;
      case 'post': {
        this.handlers.onActivity?.();
        if (this.options.command !== 'on-stream-post') return;
        const { post } = message;
        const kind = this.#admit(post.id, post.hidden, timeOf(post.createdAt), message.released);
        if (kind) this.handlers.onDelivery({ format: 'post', kind, post, raw });
        return;
      }
      case 'tree': {
        this.handlers.onActivity?.();
        if (this.options.command !== 'on-stream-post-tree') return;
        const item = message.item as unknown as Record<string, unknown>;
        const id = String(item['_id']);
        const kind = this.#admit(id, item['hidden'] === true, timeOf(item['time']), false);
        if (kind) this.handlers.onDelivery({ format: 'tree', kind, item, id, raw });
        return;
      }
      default:
        return;
    }
  }

  /** Decides whether a post frame shows something new, and as what. */
  #admit(id: string, hidden: boolean, time: number | undefined, releasedEvent: boolean): Delivery['kind'] | undefined {
    const shown = this.#seen.get(id);
    if (shown === 'visible') return undefined;
    if (hidden) {
      if (shown === 'hidden' || !this.#isNew(time)) return undefined;
      this.#remember(id, 'hidden', time);
      return 'created';
    }
    if (shown === 'hidden') {
      this.#remember(id, 'visible', time);
      return 'released';
    }
    if (!this.#isNew(time)) return undefined;
    this.#remember(id, 'visible', time);
    return releasedEvent ? 'released' : 'created';
  }

  /** After a reconnect, unseen posts older than what was already seen are the history from before. */
  #isNew(time: number | undefined): boolean {
    if (!this.#replaying || time === undefined) return true;
    // The first subscription asked for history and none came: every post since is new.
    if (this.#newestSeen === undefined && this.options.lastPosts > 0) return true;
    const cutoff = this.#newestSeen !== undefined ? this.#newestSeen - REPLAY_SLACK_MS : (this.#firstReadyAt ?? 0) - CLOCK_SKEW_MS;
    return time >= cutoff;
  }

  #remember(id: string, shown: 'hidden' | 'visible', time: number | undefined): void {
    this.#seen.mark(id, shown);
    if (time !== undefined && (this.#newestSeen === undefined || time > this.#newestSeen)) this.#newestSeen = time;
  }
}
