// Over 400 lines on purpose: this is the library's public client surface (types and the
// StreamPostsClient class with its documentation); the work is in src/client/.
import { DEFAULT_BACKOFF } from '../client/backoff.js';
import { ClientError } from '../client/errors.js';
import type { Endpoint } from '../client/endpoint.js';
import { Publisher } from '../client/publisher.js';
import type { RateLimitWait } from '../client/pacer.js';
import { setCustomTargets as postCustomTargets } from '../client/rest-streams.js';
import { Subscription, type Delivery } from '../client/subscription.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { Post, TreeItem } from '../protocol/types.js';
import { fromClientError, redactedClientError, redactSecrets, StreamPostsError } from './errors.js';
import { EventQueue } from './event-queue.js';
import {
  checkKnownOptions,
  optionalBoolean,
  optionalInteger,
  optionalString,
  requiredString,
  timeoutOption,
} from './options.js';
import {
  checkEndpoints,
  PUBLISH_OPTIONS,
  publishResult,
  readPublishOptions,
  type PublishOptions,
  type PublishResult,
} from './publish.js';
import { SharedConnection } from './shared-connection.js';

export type { ContentType, Post, TreeItem } from '../protocol/types.js';
export type { PublishOptions, PublishResult } from './publish.js';

export interface ConnectOptions {
  /**
   * `ws://` or `wss://` base URL, with or without `/v1/ws` (`server.url` works as is); or
   * several, the instances of one service: the first is tried first, and a failed attempt
   * or a drop moves to the next, round robin.
   */
  url: string | readonly string[];
  /** A reader key (subscribe) or a stream key (subscribe as the owner, publish to its stream). */
  apiKey: string;
  /** Send the key as `?apiKey=` instead of the `x-api-key` header. Default false. */
  authQuery?: boolean;
  /** Reconnect after a drop, with backoff. Default true; never after `unauthorized`. */
  reconnect?: boolean;
  /** Failed reconnect attempts in a row before giving up with `unreachable`. Default: unlimited. */
  maxReconnectAttempts?: number;
  /**
   * Bounds each wait, in ms: for the connection (in `connect`), and for each reply. A publish
   * not acknowledged in time rejects with `timeout`; the client itself reconnects and resends
   * it with its idempotency key. Default 10000.
   */
  timeoutMs?: number;
  /**
   * Told each change of the connection: for a status line, a health check or a log. Called
   * synchronously; it must not throw. Its `reason` is the service's words or the system's,
   * as data (print it through your own sanitizer); keys are cut out of it.
   */
  onState?: (state: ClientState) => void;
  /**
   * How the client finds a dead connection: a WebSocket ping every `intervalMs`, and a
   * connection whose pong has not come within `timeoutMs` is dropped and reopened (its
   * subscriptions replayed, its unacknowledged publishes resent). Default `{ intervalMs:
   * 15000, timeoutMs: 10000 }`; a test of a bot's reconnect can make it seconds or less.
   */
  heartbeat?: { intervalMs: number; timeoutMs: number };
  /**
   * Told each text frame the client sent or received, as it went over the wire (keys cut
   * out): for a trace or a protocol log. Called synchronously; it must not throw. A received
   * frame is the service's text as data: print it through your own sanitizer.
   */
  onFrame?: (frame: TracedFrame) => void;
}

/** A frame as `onFrame` reports it. */
export interface TracedFrame {
  direction: 'sent' | 'received';
  text: string;
}

/** The connection's state, as `onState` reports it. */
export type ClientState =
  /** Opening a WebSocket; `attempt` 0 is the first connection, then 1, 2, … in a row after a drop. */
  | { kind: 'connecting'; url: string; attempt: number }
  /**
   * The socket is open and commands go (the service's `connected`, when it comes, fills in the
   * client's `userId`, `streams`, `streamId`, `serverTime`). `reconnected`: not the first time.
   */
  | { kind: 'ready'; info: { reconnected: boolean } }
  /**
   * The connection dropped, or (with several urls) an attempt at one failed; the next attempt,
   * at the next url, starts after `delayMs` (0 within a round). `attempt`: drops or failures in a row.
   */
  | { kind: 'reconnecting'; delayMs: number; reason: string; attempt: number };

const CONNECT_OPTIONS = [
  'url',
  'apiKey',
  'authQuery',
  'reconnect',
  'maxReconnectAttempts',
  'timeoutMs',
  'onState',
  'heartbeat',
  'onFrame',
] as const;

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

const SUBSCRIBE_OPTIONS = [
  'streamIds',
  'lastPosts',
  'format',
  'bufferSize',
  'signal',
  'highWaterMark',
  'onSubscribed',
] as const;
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

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => StreamPostsError): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
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
    onRateLimited?: (wait: RateLimitWait) => void,
  ) {
    this.#shared = shared;
    this.#rest = rest;
    this.#secrets = secrets;
    this.#timeoutMs = timeoutMs;
    this.#publisher = new Publisher(shared.opener('publisher'), onRateLimited && { onRateLimited });
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

  /** The service's clock when it said `connected` (ISO), when it says: `serve`'s includes admin advances. */
  get serverTime(): string | undefined {
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
    const given = checkKnownOptions('subscribe', options, SUBSCRIBE_OPTIONS);
    const streamIds = given['streamIds'];
    if (streamIds !== undefined && (!Array.isArray(streamIds) || !streamIds.every((id) => typeof id === 'string'))) {
      throw new TypeError('streamIds must be an array of stream ids');
    }
    const lastPosts = optionalInteger(given, 'lastPosts', 0, MAX_LAST_POSTS) ?? 0;
    const format = optionalString(given, 'format') ?? 'post';
    if (format !== 'post' && format !== 'tree') throw new TypeError(`format must be "post" or "tree", got "${format}"`);
    const bufferSize = optionalInteger(given, 'bufferSize', 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_BUFFER_SIZE;
    const signal = given['signal'];
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('signal must be an AbortSignal');
    const highWaterMark = optionalInteger(given, 'highWaterMark', 1, bufferSize);
    const onSubscribed = given['onSubscribed'];
    if (onSubscribed !== undefined && typeof onSubscribed !== 'function')
      throw new TypeError('onSubscribed must be a function');
    const report = onSubscribed as ((info: SubscribedInfo) => void) | undefined;
    const treeFeed = this.#shared.treeFeed;
    if (treeFeed && (format !== 'tree' || streamIds !== undefined)) {
      throw new TypeError(
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
        streamIds: streamIds as string[] | undefined,
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
    const given = checkKnownOptions('publish', options, PUBLISH_OPTIONS);
    const data = readPublishOptions(given);
    const timeoutMs = optionalInteger(given, 'timeoutMs', 0, 2_147_483_647) ?? this.#timeoutMs;
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
                  `no acknowledgement within ${timeoutMs} ms (timeoutMs); publishing again with idempotencyKey "${idempotencyKey}" is safe`,
                ),
            );
    } catch (error) {
      // The publisher may still settle after a timeout; nobody is listening then.
      sent.catch(() => {});
      throw this.#error(error);
    }
    return publishResult(outcome, idempotencyKey, this.#secrets);
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
    if (typeof streamId !== 'string' || streamId === '') throw new TypeError('streamId must be a non-empty string');
    if (!Array.isArray(targets) || !targets.every((target) => typeof target === 'string'))
      throw new TypeError('targets must be an array of strings');
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

/**
 * Connects: resolves once the socket is open and the service said its first word (its
 * `connected`, on `serve` and the hosted service alike, or whatever comes first), or
 * after a short silence (`GREETING_GRACE_MS`, at most `timeoutMs`) from a service that
 * says nothing first. It never requires `connected`: what that event tells
 * (`userId`, `streams`, `streamId`, `serverTime`) is undefined until it comes. Rejects
 * with `unauthorized` (key refused), `limit-exceeded` (too many connections for the key),
 * `unreachable` (nothing there), or `timeout`; bad options throw TypeError/RangeError
 * naming the option.
 */
export function connect(options: ConnectOptions): Promise<StreamPostsClient> {
  return openClient(options, LIBRARY_POLICY);
}

/**
 * How the client meets a service that skips part of the protocol. A library client hears
 * the service's first word before it resolves (a refused key rejects `connect` itself)
 * and outlives a reply that did not come; the CLI sends its command as soon as the socket
 * is open (a refusal ends the command all the same), and a command whose first reply
 * never came ends it (exit 3 naming what was awaited) instead of reconnecting for ever.
 */
export interface ClientPolicy {
  awaitFirstWord: boolean;
  retryReplyTimeouts: boolean;
  /** With `awaitFirstWord`: the longest wait for it (default GREETING_GRACE_MS). */
  firstWordGraceMs?: number;
  /** Publishes have waited on the service's rate limit for a while (see Publisher). */
  onRateLimited?: (wait: RateLimitWait) => void;
}

/** The longest `connect` waits, once the socket is open, for the service's first word. */
export const GREETING_GRACE_MS = 2_000;

const LIBRARY_POLICY: ClientPolicy = { awaitFirstWord: true, retryReplyTimeouts: true };

/** A state as the caller sees it: the address it names and the reason it gives without the key (`/v1/ws/sp%5F…` too). */
function withoutSecrets(state: ClientState, secrets: readonly string[]): ClientState {
  if (state.kind === 'connecting') return { ...state, url: redactSecrets(state.url, secrets) };
  if (state.kind === 'reconnecting') return { ...state, reason: redactSecrets(state.reason, secrets) };
  return state;
}

/** `connect` with a policy of its own: for the CLI, not exported from the package. */
export async function openClient(options: ConnectOptions, policy: ClientPolicy): Promise<StreamPostsClient> {
  const given = checkKnownOptions('connect', options, CONNECT_OPTIONS);
  const endpoints = checkEndpoints(given);
  const endpoint = endpoints[0]!;
  const apiKey = requiredString(given, 'apiKey');
  const authQuery = optionalBoolean(given, 'authQuery') ?? false;
  const reconnect = optionalBoolean(given, 'reconnect') ?? true;
  const maxAttempts =
    optionalInteger(given, 'maxReconnectAttempts', 1, Number.MAX_SAFE_INTEGER) ?? Number.POSITIVE_INFINITY;
  const timeoutMs = timeoutOption(given);
  const heartbeat = heartbeatOption(given['heartbeat']);
  const secrets = [apiKey, encodeURIComponent(apiKey)];
  // Named in messages, so without the key (a path may hold it, escaped or not).
  const urls = redactSecrets(endpoints.map((each) => each.wsUrl).join(', '), secrets);
  const onState = given['onState'];
  if (onState !== undefined && typeof onState !== 'function') throw new TypeError('onState must be a function');
  const report = onState as ((state: ClientState) => void) | undefined;
  const onFrame = given['onFrame'];
  if (onFrame !== undefined && typeof onFrame !== 'function') throw new TypeError('onFrame must be a function');
  const trace = onFrame as ((frame: TracedFrame) => void) | undefined;

  // The client lives on after a reply that did not come: it reconnects and resends, which
  // the idempotency keys make safe, instead of ending every subscription with it.
  const shared = new SharedConnection(
    {
      endpoint: endpoints,
      apiKey,
      authQuery,
      reconnect,
      maxAttempts,
      backoff: DEFAULT_BACKOFF,
      timeoutMs,
      retryReplyTimeouts: policy.retryReplyTimeouts,
      ...(heartbeat === undefined ? {} : { heartbeat }),
    },
    report && ((state) => report(withoutSecrets(state, secrets))),
    trace && ((direction, text) => trace({ direction, text: redactSecrets(text, secrets) })),
  );
  shared.connection.start();
  const ended = shared.connection.done.then(() => {
    throw new StreamPostsError('closed', 'the connection closed before it was ready');
  });
  ended.catch(() => {});
  try {
    // Each address's upgrade has timeoutMs (the connection's own timer, which says it ran
    // out); this only bounds them together.
    await withTimeout(
      Promise.race([shared.firstReady, ended]),
      (endpoints.length + 1) * timeoutMs,
      () => new StreamPostsError('timeout', `no answer from ${urls} within ${timeoutMs} ms (timeoutMs)`),
    );
    // The tree feed never speaks first; a silent service is still usable after the grace.
    if (policy.awaitFirstWord && !endpoint.treeFeed) {
      const graceMs = Math.min(policy.firstWordGraceMs ?? GREETING_GRACE_MS, timeoutMs);
      const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([shared.firstWord, ended, grace]);
    }
    return new StreamPostsClient(shared, { endpoints, apiKey }, secrets, timeoutMs, policy.onRateLimited);
  } catch (error) {
    await shared.connection.close();
    if (error instanceof ClientError && error.kind === 'timeout') {
      throw new StreamPostsError('timeout', `no answer from ${urls} within ${timeoutMs} ms (timeoutMs)`, {
        cause: redactedClientError(error, secrets),
      });
    }
    throw fromClientError(error, secrets);
  }
}

/** `heartbeat`, checked: two whole numbers of ms, each within what a timer can wait. */
function heartbeatOption(value: unknown): { intervalMs: number; timeoutMs: number } | undefined {
  if (value === undefined) return undefined;
  const given = value as Record<string, unknown> | null;
  if (given === null || typeof given !== 'object')
    throw new TypeError('heartbeat must be an object { intervalMs, timeoutMs }');
  const unknown = Object.keys(given).find((name) => name !== 'intervalMs' && name !== 'timeoutMs');
  if (unknown !== undefined) throw new TypeError(`heartbeat: unknown option "${unknown}"`);
  const checked = (name: 'intervalMs' | 'timeoutMs'): number => {
    const ms = given[name];
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_TIMER_MS)
      throw new RangeError(
        `heartbeat.${name} must be a whole number of ms from 1 to ${MAX_TIMER_MS}, got ${String(ms)}`,
      );
    return ms;
  };
  return { intervalMs: checked('intervalMs'), timeoutMs: checked('timeoutMs') };
}

/** Node keeps a timer's delay in 32 bits. */
const MAX_TIMER_MS = 2_147_483_647;
