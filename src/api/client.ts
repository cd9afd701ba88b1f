// `connect`: its options, each checked with an error naming it, and the opening of the shared
// connection the client is made of; the client itself is in stream-posts-client.ts.
import * as z from 'zod/mini';
import { DEFAULT_BACKOFF, type BackoffOptions } from '../client/backoff.js';
import type { RateLimitWait } from '../client/pacer.js';
import { ClientError } from '../client/errors.js';
import { MAX_TIMER_MS } from '../client/timer-delay.js';
import { fromClientError, redactedClientError, redactSecrets, StreamPostsError } from './errors.js';
import { StreamPostsClient, withTimeout } from './stream-posts-client.js';

export type {
  ContentType,
  Post,
  PostEvent,
  PostSubscription,
  PublishOptions,
  PublishResult,
  SubscribedInfo,
  SubscribeOptions,
  SubscriptionEvent,
  TreeEvent,
  TreeItem,
} from './stream-posts-client.js';
export type { StreamPostsClient } from './stream-posts-client.js';
import {
  callback,
  flag,
  integer,
  LIBRARY_TIMEOUT_MS,
  OptionTable,
  optional,
  requiredText,
  TIMEOUT_OPTION,
  URL_OPTION,
  type OptionSchema,
  type TableValues,
} from './option-table.js';
import type { Endpoint } from '../client/endpoint.js';
import { libraryEndpoints } from './endpoints.js';
import { SharedConnection } from '../client/shared-connection.js';

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

type Heartbeat = NonNullable<ConnectOptions['heartbeat']>;

/** `heartbeat`: two whole numbers of ms, each within what a timer can wait. */
const HEARTBEAT_OPTION: OptionSchema<Heartbeat> = (name) => {
  const ms = integer(1, MAX_TIMER_MS, 'a whole number of ms');
  return z.strictObject(
    { intervalMs: ms(`${name}.intervalMs`), timeoutMs: ms(`${name}.timeoutMs`) },
    { error: () => `${name} must be an object { intervalMs, timeoutMs }` },
  );
};

/** `connect`'s options but the addresses (the CLI's come already parsed). */
const CLIENT_OPTIONS = {
  apiKey: requiredText,
  ...optional({
    authQuery: flag,
    reconnect: flag,
    maxReconnectAttempts: integer(1, Number.MAX_SAFE_INTEGER),
    timeoutMs: TIMEOUT_OPTION,
    onState: callback<(state: ClientState) => void>(),
    heartbeat: HEARTBEAT_OPTION,
    onFrame: callback<(frame: TracedFrame) => void>(),
  }),
};
const CONNECT = new OptionTable('connect', { url: URL_OPTION, ...CLIENT_OPTIONS });
const OPEN_CLIENT = new OptionTable('connect', CLIENT_OPTIONS);
type CheckedClientOptions = TableValues<typeof CLIENT_OPTIONS>;

// The table gives what ConnectOptions says, and takes every option it names.
const tableMatchesType: (
  options: TableValues<typeof CONNECT extends OptionTable<infer S> ? S : never>,
) => ConnectOptions = (options) => options;
void tableMatchesType;

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
export async function connect(options: ConnectOptions): Promise<StreamPostsClient> {
  const { url, ...given } = CONNECT.check(options);
  return open(libraryEndpoints(url), given, LIBRARY_POLICY);
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
  /** The waits between reconnects (default DEFAULT_BACKOFF): a screen someone watches waits less. */
  backoff?: BackoffOptions;
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

/** `connect`'s options but the addresses, which come already parsed. */
export type ClientOptions = Omit<ConnectOptions, 'url'>;

/**
 * `connect` to addresses already parsed (the CLI's settings hold them so), with a policy of
 * its own: for the CLI, not exported from the package.
 */
export function openClient(
  endpoints: readonly Endpoint[],
  options: ClientOptions,
  policy: ClientPolicy = LIBRARY_POLICY,
): Promise<StreamPostsClient> {
  return open(endpoints, OPEN_CLIENT.check(options), policy);
}

async function open(
  endpoints: readonly Endpoint[],
  given: CheckedClientOptions,
  policy: ClientPolicy,
): Promise<StreamPostsClient> {
  const endpoint = endpoints[0]!;
  const { apiKey, authQuery = false, reconnect = true, heartbeat, onState: report, onFrame: trace } = given;
  const maxAttempts = given.maxReconnectAttempts ?? Number.POSITIVE_INFINITY;
  const timeoutMs = given.timeoutMs ?? LIBRARY_TIMEOUT_MS;
  const secrets = [apiKey, encodeURIComponent(apiKey)];
  // Named in messages, so without the key (a path may hold it, escaped or not).
  const urls = redactSecrets(endpoints.map((each) => each.wsUrl).join(', '), secrets);

  // The client lives on after a reply that did not come: it reconnects and resends, which
  // the idempotency keys make safe, instead of ending every subscription with it.
  const shared = new SharedConnection(
    {
      endpoint: endpoints,
      apiKey,
      authQuery,
      reconnect,
      maxAttempts,
      backoff: policy.backoff ?? DEFAULT_BACKOFF,
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
    return new StreamPostsClient(shared, { endpoints, apiKey }, secrets, timeoutMs, {
      reconnect,
      onRateLimited: policy.onRateLimited,
    });
  } catch (error) {
    await shared.connection.close();
    if (error instanceof ClientError && error.kind === 'timeout') {
      const redacted = redactedClientError(error, secrets);
      throw new StreamPostsError('timeout', `no answer from ${urls} within ${timeoutMs} ms (timeoutMs)`, {
        cause: redacted,
        ...(redacted.awaited === undefined ? {} : { awaited: redacted.awaited }),
      });
    }
    throw fromClientError(error, secrets);
  }
}
