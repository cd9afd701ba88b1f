// The library's client handle: what `connect` resolves to (subscribe, publish, targets, close)
// with its documentation; `connect` and its options are in client.ts, the work in src/client/.
import type { Endpoint } from '../client/endpoint.js';
import { mayBePublished } from '../client/errors.js';
import { serviceTimeMs } from '../client/service-time.js';
import { timerDelay } from '../client/timer-delay.js';
import { Publisher } from '../client/publisher.js';
import type { RateLimitWait } from '../client/pacer.js';
import { setCustomTargets as postCustomTargets } from '../client/rest-streams.js';
import { Subscription, type Delivery } from '../client/subscription.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { Post, TreeItem } from '../protocol/types.js';
import { fromClientError, StreamPostsError } from './errors.js';
import { EventQueue } from './event-queue.js';
import { optionError } from './options.js';
import { callback, integer, OptionTable, oneOf, optional, shaped, textList } from './option-table.js';
import {
  PUBLISH_OPTIONS,
  publishResult,
  readPublishOptions,
  refusalAsValue,
  type PublishOptions,
  type PublishResult,
} from './publish.js';
import type { SharedConnection } from '../client/shared-connection.js';

export type { ContentType, Post, TreeItem } from '../protocol/types.js';
export type { PublishOptions, PublishResult } from './publish.js';

export interface SubscribeOptions {
  /** Default: every stream the user follows or owns. */
  streamIds?: string[];
  /** Recent posts per stream delivered first, 0-100. Default 0. */
  lastPosts?: number;
  /** `post` (default) gives Post objects, `tree` gives tree items (news-terminal format). */
  format?: 'post' | 'tree';
  /** Events held for a consumer that is behind; past this the iteration ends with `overflow`. Default 10000. */
  bufferSize?: number;
  /** Aborting it closes the subscription: the iteration ends normally, as with `close()`. */
  signal?: AbortSignal;
  /**
   * Stop reading the socket once this many events wait for the consumer, until it has taken
   * them all: a consumer that does not pull (waiting for its own output, say) holds the rest
   * at the service. The socket is the client's: its other subscriptions and publishes wait too.
   * Default: never pause (a consumer that falls `bufferSize` behind gets `overflow`).
   */
  highWaterMark?: number;
  /** Told each time the service acknowledged the subscription: the first time (as `ready`) and after each reconnect. */
  onSubscribed?: (info: SubscribedInfo) => void;
}

/** The service's acknowledgement of a subscription. */
export interface SubscribedInfo {
  /** The streams the service resolved the subscription to; empty on a tree feed address, which never lists them. */
  streamIds: string[];
  /** False the first time, true after a reconnect. */
  reconnected: boolean;
}

const SUBSCRIBE = new OptionTable(
  'subscribe',
  optional({
    streamIds: textList(),
    lastPosts: integer(0, MAX_LAST_POSTS),
    format: oneOf(['post', 'tree']),
    bufferSize: integer(1, Number.MAX_SAFE_INTEGER),
    signal: shaped<AbortSignal>(
      (value) => value instanceof AbortSignal,
      (name) => `${name} must be an AbortSignal`,
    ),
    // At most bufferSize: checked with it, below.
    highWaterMark: integer(1, Number.MAX_SAFE_INTEGER),
    onSubscribed: callback<(info: SubscribedInfo) => void>(),
  }),
);
const PUBLISH = new OptionTable('publish', PUBLISH_OPTIONS);
const DEFAULT_BUFFER_SIZE = 10_000;

/** A post seen for the first time (`created`; hidden posts have `text: null`) or its content becoming visible (`released`). */
export interface PostEvent {
  type: 'created' | 'released';
  /** One of the recent posts asked for with `lastPosts`, delivered before the live ones. */
  history: boolean;
  format: 'post';
  post: Post;
}

/** The same, as a tree item. */
export interface TreeEvent {
  type: 'created' | 'released';
  /** As for PostEvent. */
  history: boolean;
  format: 'tree';
  item: TreeItem;
}

export type SubscriptionEvent = PostEvent | TreeEvent;

/**
 * Live posts, as an async iterable for one consumer. Across reconnects nothing
 * is lost or repeated: posts published during an outage arrive after it, and
 * a release that happened meanwhile arrives as `released`.
 */
export interface PostSubscription<E extends SubscriptionEvent = SubscriptionEvent> extends AsyncIterable<E> {
  /** Resolves once the service acknowledged the subscription and the requested history is queued; rejects like the iteration would. */
  readonly ready: Promise<{ streamIds: string[] }>;
  /** Stops delivering; the iteration ends. Same as `break` in the `for await`. */
  close(): Promise<void>;
}

/** `promise`, or the error `onTimeout` makes once `ms` have passed. */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => StreamPostsError): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), timerDelay(ms));
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function toEvent(delivery: Delivery): SubscriptionEvent {
  return delivery.format === 'post'
    ? { type: delivery.kind, history: delivery.history, format: 'post', post: delivery.post }
    : { type: delivery.kind, history: delivery.history, format: 'tree', item: delivery.item as unknown as TreeItem };
}

/** A connection to the service, shared by its subscriptions and publishes. Made by `connect`. */
export class StreamPostsClient {
  readonly #shared: SharedConnection;
  readonly #publisher: Publisher;
  readonly #secrets: readonly string[];
  readonly #timeoutMs: number;
  readonly #rest: { endpoints: readonly Endpoint[]; apiKey: string };
  readonly #subscriptions = new Set<Subscription>();
  #closed = false;

  /** @internal */
  constructor(
    shared: SharedConnection,
    rest: { endpoints: readonly Endpoint[]; apiKey: string },
    secrets: readonly string[],
    timeoutMs: number,
    publishing: { reconnect: boolean; onRateLimited?: ((wait: RateLimitWait) => void) | undefined },
  ) {
    this.#shared = shared;
    this.#rest = rest;
    this.#secrets = secrets;
    this.#timeoutMs = timeoutMs;
    const { reconnect, onRateLimited } = publishing;
    this.#publisher = new Publisher(shared.opener('publisher'), {
      ackTimeoutMs: timeoutMs,
      reconnect,
      ...(onRateLimited === undefined ? {} : { onRateLimited }),
    });
    // Failures reach each publish through the publisher itself.
    this.#publisher.start().catch(() => {});
  }

  // The facts below come from the service's `connected` event (its latest, after a
  // reconnect). Nothing waits for it: undefined while it has not come, and for good from
  // a service that sends none or leaves the field out (the hosted service names no user).

  /** The user the key acts as. */
  get userId(): string | undefined {
    const userId = this.#shared.facts?.userId;
    return userId === '' ? undefined : userId;
  }

  /** The streams the user follows or owns, when the service said. */
  get streams(): readonly string[] | undefined {
    const facts = this.#shared.facts;
    return facts && facts.userId !== '' ? Object.freeze([...facts.streams]) : undefined;
  }

  /** For a stream key, the one stream it publishes to (when the service says, as `serve` does). */
  get streamId(): string | undefined {
    return this.#shared.facts?.streamId;
  }

  /**
   * The service's clock when it said `connected` (ISO), when it says: `serve`'s includes admin
   * advances. A time more than 100 years from this machine's clock is not taken (undefined).
   */
  get serverTime(): string | undefined {
    const stated = this.statedServerTime;
    return serviceTimeMs(stated) === undefined ? undefined : stated;
  }

  /**
   * `connected.serverTime` as the service said it, however far off (`serverTime` leaves out
   * one past belief): to tell the user how far the service's clock is from this machine's.
   */
  get statedServerTime(): string | undefined {
    return this.#shared.facts?.serverTime;
  }

  #error(error: unknown): StreamPostsError {
    if (this.#closed && !(error instanceof StreamPostsError))
      return new StreamPostsError('closed', 'the client was closed', { cause: error });
    return fromClientError(error, this.#secrets);
  }

  subscribe(options: SubscribeOptions & { format: 'tree' }): PostSubscription<TreeEvent>;
  subscribe(options?: SubscribeOptions & { format?: 'post' }): PostSubscription<PostEvent>;
  subscribe(options?: SubscribeOptions): PostSubscription;
  subscribe(options: SubscribeOptions = {}): PostSubscription {
    const given = SUBSCRIBE.check(options);
    const {
      streamIds,
      lastPosts = 0,
      format = 'post',
      bufferSize = DEFAULT_BUFFER_SIZE,
      signal,
      highWaterMark,
    } = given;
    const report = given.onSubscribed;
    if (highWaterMark !== undefined && highWaterMark > bufferSize)
      throw optionError(
        'range',
        'highWaterMark',
        `highWaterMark must be an integer from 1 to ${bufferSize} (bufferSize), got ${highWaterMark}`,
      );
    const treeFeed = this.#shared.treeFeed;
    if (treeFeed && (format !== 'tree' || streamIds !== undefined)) {
      throw optionError(
        'type',
        'format',
        'a tree feed url (…/graphql?format=tree) gives tree items of the streams named in it: subscribe with format "tree" and no streamIds',
      );
    }
    if (this.#closed) throw new StreamPostsError('closed', 'the client was closed');

    let markReady!: (value: { streamIds: string[] }) => void;
    let failReady!: (error: unknown) => void;
    const ready = new Promise<{ streamIds: string[] }>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    // Callers that only iterate must not get an unhandled rejection from `ready`.
    ready.catch(() => {});
    let subscription!: Subscription;
    const stop = async () => {
      this.#subscriptions.delete(subscription);
      await subscription.close();
    };
    const flow =
      highWaterMark === undefined
        ? undefined
        : {
            highWaterMark,
            pause: () => subscription.connection.pause(),
            resume: () => subscription.connection.resume(),
          };
    const queue = new EventQueue<SubscriptionEvent>(bufferSize, stop, flow);
    subscription = new Subscription(
      this.#shared.opener('subscription'),
      {
        command: format === 'tree' ? 'on-stream-post-tree' : 'on-stream-post',
        streamIds,
        lastPosts,
        treeFeed,
      },
      {
        onDelivery: (delivery) => queue.push(toEvent(delivery)),
        onSubscribed: (ack) => {
          markReady({ streamIds: ack.streamIds });
          report?.({ streamIds: [...ack.streamIds], reconnected: ack.reconnected });
        },
      },
    );
    this.#subscriptions.add(subscription);
    const started = subscription.start();
    started.then(
      () => {
        failReady(new StreamPostsError('closed', 'the subscription was closed before it was acknowledged'));
        queue.end();
      },
      (error: unknown) => {
        const failure = this.#error(error);
        failReady(failure);
        queue.end(failure);
      },
    );
    if (signal) {
      const abort = () => void queue.return();
      if (signal.aborted) abort();
      else {
        signal.addEventListener('abort', abort, { once: true });
        // The listener must not keep the subscription (and its queue) alive in a long-lived signal.
        started.finally(() => signal.removeEventListener('abort', abort)).catch(() => {});
      }
    }
    return {
      ready,
      close: () => queue.return().then(() => undefined),
      [Symbol.asyncIterator]: () => queue,
    };
  }

  /**
   * Publishes one post (the key must be the stream's key). Safe to retry: the
   * idempotency key is generated when not given, and a post not yet
   * acknowledged when the connection drops is resent with it after the
   * reconnect. Rejects with the service's code (`forbidden`,
   * `invalid-argument`, …), `timeout` after `timeoutMs`, or `closed`.
   */
  async publish(options: PublishOptions): Promise<PublishResult> {
    const answer = await this.publishOrRefusal(options);
    if (answer instanceof StreamPostsError) throw answer;
    return answer;
  }

  /**
   * `publish`, the service's refusal of the post (`forbidden`, `invalid-argument`, …) resolved
   * as its StreamPostsError instead of thrown, for a batch that reports each post's outcome and
   * goes on; a failure of the connection, `closed` or `timeout` still rejects.
   */
  async publishOrRefusal(options: PublishOptions): Promise<PublishResult | StreamPostsError> {
    const given = PUBLISH.check(options);
    const data = readPublishOptions(given);
    const timeoutMs = given.timeoutMs ?? this.#timeoutMs;
    const { idempotencyKey } = data;
    if (this.#closed) throw new StreamPostsError('closed', 'the client was closed');
    const sent = this.#publisher.publish(data);
    let outcome;
    try {
      outcome =
        timeoutMs === 0
          ? await sent
          : await withTimeout(
              sent,
              timeoutMs,
              () =>
                new StreamPostsError(
                  'timeout',
                  `no acknowledgement within ${timeoutMs} ms (timeoutMs); ${mayBePublished(idempotencyKey)}`,
                  { idempotencyKey },
                ),
            );
    } catch (error) {
      // The publisher may still settle after a timeout; nobody is listening then.
      sent.catch(() => {});
      throw this.#error(error);
    }
    return refusalAsValue(() => publishResult(outcome, idempotencyKey, this.#secrets));
  }

  /**
   * Replaces the key's user's selected targets on a custom stream it follows (REST `POST
   * /v1/streams/{streamId}/custom-targets`): from then on its posts for those targets reach
   * the user, on every connection. Targets are case-sensitive; `[]` selects none. Resolves
   * with the selection the service kept; rejects with the service's code (`invalid-argument`
   * for a target the stream does not offer or a stream that is not custom, `forbidden` when
   * the user does not follow it, `not-found`), `unauthorized`, `timeout` or `unreachable`.
   */
  async setCustomTargets(streamId: string, targets: readonly string[]): Promise<string[]> {
    if (typeof streamId !== 'string' || streamId === '')
      throw optionError('type', 'streamId', 'streamId must be a non-empty string');
    if (!Array.isArray(targets) || !targets.every((target) => typeof target === 'string'))
      throw optionError('type', 'targets', 'targets must be an array of strings');
    if (this.#closed) throw new StreamPostsError('closed', 'the client was closed');
    try {
      return await postCustomTargets(this.#rest.endpoints, this.#rest.apiKey, streamId, targets, this.#timeoutMs);
    } catch (error) {
      throw this.#error(error);
    }
  }

  /** Ends every subscription's iteration, rejects publishes in flight with `closed`, closes the socket (1000). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((subscription) => subscription.close()));
    await this.#shared.connection.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
