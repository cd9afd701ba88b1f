// What a connection promises its owner (a subscription, a publisher, the library's shared
// connection): its options, the states it tells of, the handlers it calls, and the face an
// owner holds. The connection itself is connection.ts.
import type { RateLimit, ServerMessage } from '../protocol/events.js';
import type { BackoffOptions } from './backoff.js';
import type { Endpoint } from './endpoint.js';
import type { ClientError } from './errors.js';

export interface HeartbeatOptions {
  intervalMs: number;
  timeoutMs: number;
}

export interface ConnectionOptions {
  /**
   * The service, or several addresses of it (instances sharing one store): the first is
   * tried first; a failed attempt or a drop moves to the next, round robin.
   */
  endpoint: Endpoint | readonly Endpoint[];
  apiKey: string | undefined;
  /** Send the key as `?apiKey=` instead of the `x-api-key` header. */
  authQuery?: boolean;
  /** Reconnect after a drop (never after `unauthorized`). */
  reconnect?: boolean;
  /**
   * Consecutive failed attempts after a drop before giving up (each address tried counts
   * as one); unlimited by default.
   */
  maxAttempts?: number;
  backoff?: BackoffOptions;
  heartbeat?: HeartbeatOptions;
  /**
   * The longest wait for each answer: the opening handshake, and each reply an
   * owner awaits with `expectReply` (default 30 s).
   */
  timeoutMs?: number;
  /**
   * A reply that does not come within `timeoutMs` drops the socket and reconnects (the
   * owner resends), even before the service answered any command: for a long-lived client
   * whose commands are safe to repeat. By default only once the service has answered one,
   * so a one-shot command against a service that never answers ends with `timeout`.
   */
  retryReplyTimeouts?: boolean;
  /**
   * How long a connection must stay up before the backoff starts again from
   * its first step (default 10 s): a service that keeps closing connections
   * soon after they open is retried ever more slowly, not in a tight loop.
   */
  stableMs?: number;
  random?: () => number;
}

export interface ReadyInfo {
  /** False on the first connection, true after a reconnect. */
  reconnected: boolean;
}

/**
 * What a `connected` event said (PROTOCOL.md B2, B3). A service may send it late, with
 * `message` only, or not at all: nothing waits for it.
 */
export interface ConnectedFacts {
  /** Empty when the service did not say. */
  userId: string;
  streams: string[];
  /** The service's clock when it said `connected` (ISO), when it says. */
  serverTime?: string;
  /** The stream a stream key publishes to, when the service says. */
  streamId?: string;
  /** This connection's command limit, when the service states it. */
  rateLimit?: RateLimit;
}

/**
 * Asks `serve` for this contract's dialect (PROTOCOL.md B1a) on every address the client
 * opens; the hosted service ignores it.
 */
export const DIALECT_QUERY = 'hello=1';

export type ConnectionState =
  | { kind: 'connecting'; url: string; attempt: number }
  | { kind: 'ready'; info: ReadyInfo }
  /** `attempt`: how many connections in a row failed or ended before `stableMs` (1 after one drop). */
  | { kind: 'reconnecting'; delayMs: number; reason: string; attempt: number };

export interface ConnectionHandlers {
  /**
   * Every (re)connection, as soon as the socket is open: (re)send subscriptions here. The
   * service's `connected`, when it comes, arrives later through `onMessage`.
   */
  onReady?(info: ReadyInfo): void;
  /** Every message after the socket opened, `connected` included. */
  onMessage?(message: ServerMessage, raw: string): void;
  onState?(state: ConnectionState): void;
  /** Each text frame as it went out or came in, before anything is made of it: for a trace. */
  onFrame?(direction: FrameDirection, text: string): void;
}

export type FrameDirection = 'sent' | 'received';

/** What a subscription or publisher needs of its connection: one of its own, or a share of one. */
export interface ConnectionLike {
  readonly done: Promise<void>;
  start(): unknown;
  send(frame: object): boolean;
  sendText(frame: string): boolean;
  /** Starts the wait for the reply to a command just sent; call the result when it arrives. */
  expectReply(what: string): () => void;
  pause(): void;
  resume(): void;
  /** The socket is open: a command sent now can be answered. */
  readonly isOpen: boolean;
  /** Reading is paused: no reply can arrive, however late it is. */
  readonly paused: boolean;
  fail(error: ClientError): void;
  /** Drops the socket for a passing reason: reconnect (with backoff), or end when reconnecting is off. */
  drop(reason: string): void;
  close(): Promise<void>;
}
export type OpenConnection = (handlers: ConnectionHandlers) => ConnectionLike;
