import { CLOSE_POLICY_VIOLATION, CLOSE_UNAUTHORIZED, UNAUTHORIZED_CLOSE_REASON } from '../../protocol/close-codes.js';
import { ProtocolError, unauthorizedMessage } from '../../protocol/errors.js';
import type { SubscribeArgs } from '../../protocol/types.js';
import {
  isPending,
  type Awaitable,
  type Identity,
  type PostRecord,
  type StreamRecord,
  type UserRecord,
} from '../stores/store.js';
import type { ResolvedSubscription, StreamPostsService } from './service.js';

// The service names what it needs of the fan-out and of the key limits; ws/fanout.ts and
// ws/key-limits.ts are what fits (ws/ depends on service/, never the reverse).

export type Format = 'envelope' | 'tree';

/**
 * How a subscription learns of a hidden post (PROTOCOL.md B1a): `push` (our dialect) sends
 * it hidden at creation and again at its release; `at-release` (the hosted dialect, and
 * GraphQL) holds it back while hidden and sends it once, at its release, as an ordinary new
 * post with its text: every public client of the hosted service reads only
 * `stream.post.created` and runs string operations on its text.
 */
export type HiddenPosts = 'push' | 'at-release';

/** What the service reads of a subscription. */
export interface SubscriptionShape {
  readonly format: Format;
  readonly streams: readonly StreamRecord[];
  readonly hiddenPosts: HiddenPosts;
}

/** Where subscriptions are delivered from (ws/fanout.ts): made, registered, let go, turned live. */
export interface Delivery<S extends SubscriptionShape, H> {
  subscription(holder: H, format: Format, user: UserRecord, streams: StreamRecord[], hiddenPosts: HiddenPosts): S;
  add(subscription: S): void;
  remove(subscription: S): void;
  /** Sends the history, then what arrived while it was read, and lets live posts through. */
  goLive(subscription: S, history: readonly PostRecord[]): void;
}

/** The open connections of each key, and their cap (ws/key-limits.ts). */
export interface KeyConnections {
  readonly maxConnections: number;
  /** Who a key is, as one string: what the counts go by. */
  keyIdOf(identity: Identity): string;
  /** Counts a connection in; false (and nothing counted) when the key already has its maximum. */
  openConnection(keyId: string): boolean;
  closeConnection(keyId: string): void;
}

/** A connection let in: who it is, and the key's place among its connections (given back by `leave`). */
export interface Admission {
  identity: Identity;
  user: UserRecord;
  keyId: string;
}

/**
 * Why a connection was not let in, in the same words on every transport: one that can send an
 * error event sends `code` and `message`, then closes with `closeCode` and `closeReason`; one
 * that cannot (the tree feed, GraphQL) closes with `closeCode` and the `message` itself.
 */
export class Refusal {
  constructor(
    readonly code: 'unauthorized' | 'limit-exceeded',
    readonly message: string,
    readonly closeCode: number,
    readonly closeReason: string,
  ) {}
}

/** One subscribe, as any transport asks it. */
export interface SubscribeRequest {
  identity: Identity;
  /** Checked by protocol/ (`lastPosts` in range, stream ids split) before it comes here. */
  args: SubscribeArgs;
  /** The command (or GraphQL field) that asked, named in its errors and its acknowledgement. */
  command: string;
  requestId: string | undefined;
  format: Format;
  hiddenPosts: HiddenPosts;
}

/** A connection's side of its subscribes: the transport keeps its subscriptions and writes to its peer. */
export interface SubscriptionHolder<S> {
  /** Once true, a subscribe still under way registers nothing and says nothing. */
  readonly closed: boolean;
  /** Subscriptions held now, and places taken by subscribes under way: what the cap counts. */
  readonly subscriptionCount: number;
  /** The held subscription a new one of these streams in this format replaces; undefined: it adds one. */
  repeatOf(format: Format, streams: readonly StreamRecord[]): S | undefined;
  /** Keeps `subscription`, registered in the fan-out in this same turn, in place of `replaced`. */
  hold(subscription: S, replaced: S | undefined): void;
  /** The history is read (without what waits for its release): tell the peer; it is sent right after, then live posts. */
  acknowledge(request: SubscribeRequest, subscription: S, history: readonly PostRecord[]): void;
}

export interface SubscriptionServiceOptions<S extends SubscriptionShape, H extends SubscriptionHolder<S>> {
  service: StreamPostsService;
  fanout: Delivery<S, H>;
  keyLimits: KeyConnections;
  /** 0: no cap. */
  maxSubscriptions: number;
  /** Told each time a subscription goes live, on any transport (a scenario may wait for the first). */
  live?: () => void;
}

/**
 * The subscription protocol once, for every transport (the WebSocket session and its URL forms
 * and tree feeds, GraphQL): who is let in, and the way from a subscribe to live posts. The
 * transports only encode, write and close.
 */
export class SubscriptionService<S extends SubscriptionShape, H extends SubscriptionHolder<S>> {
  readonly #service: StreamPostsService;
  readonly #fanout: Delivery<S, H>;
  readonly #keyLimits: KeyConnections;
  readonly #maxSubscriptions: number;
  readonly #live: (() => void) | undefined;

  constructor(options: SubscriptionServiceOptions<S, H>) {
    this.#live = options.live;
    this.#service = options.service;
    this.#fanout = options.fanout;
    this.#keyLimits = options.keyLimits;
    this.#maxSubscriptions = options.maxSubscriptions;
  }

  /**
   * Checks the key, finds its user and counts the connection against the key's cap: at once in
   * memory, a promise while a shared store is asked. Undefined when the connection closed
   * meanwhile (nothing counted, nothing to tell it).
   */
  admit(key: string | undefined, connection: { readonly closed: boolean }): Awaitable<Admission | Refusal | undefined> {
    const identity = this.#service.authenticate(key);
    return isPending(identity)
      ? identity.then((found) => this.#admit(found, key, connection))
      : this.#admit(identity, key, connection);
  }

  #admit(
    identity: Identity | undefined,
    key: string | undefined,
    connection: { readonly closed: boolean },
  ): Admission | Refusal | undefined {
    if (!identity)
      return new Refusal('unauthorized', unauthorizedMessage(key), CLOSE_UNAUTHORIZED, UNAUTHORIZED_CLOSE_REASON);
    const user = this.#service.userOf(identity);
    if (connection.closed) return undefined;
    const keyLimits = this.#keyLimits;
    const keyId = keyLimits.keyIdOf(identity);
    if (!keyLimits.openConnection(keyId)) {
      return new Refusal(
        'limit-exceeded',
        `this key already has ${keyLimits.maxConnections} open connections, the most the server allows`,
        CLOSE_POLICY_VIOLATION,
        'too many connections for this key',
      );
    }
    return { identity, user, keyId };
  }

  /** An admitted connection has closed: its key may open another. */
  leave(keyId: string): void {
    this.#keyLimits.closeConnection(keyId);
  }

  /**
   * Resolves the streams and checks the cap at once (a burst of subscribes cannot pass it
   * together: the transport takes its place before anything is awaited), then registers the
   * subscription, reads its history, has the holder acknowledge it and turns it live. Throws
   * (or rejects with) a ProtocolError the transport answers in its own way.
   */
  subscribe(holder: H, request: SubscribeRequest): Promise<void> | undefined {
    const resolved = this.#service.resolveStreams(request.identity, request.args.streamIds, request.command);
    const replaced = holder.repeatOf(request.format, resolved.streams);
    const max = this.#maxSubscriptions;
    if (replaced === undefined && max !== 0 && holder.subscriptionCount >= max) {
      throw new ProtocolError(
        'limit-exceeded',
        `this connection already holds ${max} subscriptions, the most the server allows; open another connection, or name several streams in one subscription`,
        request.command,
      );
    }
    // On a shared store, this instance first dispatches every event stored before now: a post
    // acknowledged (through any instance) before this subscribe is history, never a live post.
    const caughtUp = this.#service.caughtUp();
    return caughtUp === undefined
      ? this.#register(holder, request, resolved, replaced)
      : caughtUp.then(() => this.#register(holder, request, resolved, replaced));
  }

  #register(
    holder: H,
    request: SubscribeRequest,
    resolved: ResolvedSubscription,
    replaced: S | undefined,
  ): Promise<void> | undefined {
    if (holder.closed) return undefined;
    const { format, hiddenPosts } = request;
    const subscription = this.#fanout.subscription(holder, format, resolved.user, resolved.streams, hiddenPosts);
    // Registered before history is read, so nothing published meanwhile is missed.
    if (replaced) this.#fanout.remove(replaced);
    this.#fanout.add(subscription);
    holder.hold(subscription, replaced);
    // Live posts wait in the subscription until goLive, so reading history before the
    // acknowledgement loses nothing, and lets it say how many history messages follow.
    const read = this.#service.history(resolved, request.args.lastPosts);
    if (!isPending(read)) {
      this.#goLive(holder, request, subscription, read);
      return undefined;
    }
    return read.then((posts) => this.#goLive(holder, request, subscription, posts));
  }

  #goLive(holder: H, request: SubscribeRequest, subscription: S, read: PostRecord[]): void {
    if (holder.closed) return;
    // Held back while hidden: such a post reaches this subscription at its release.
    const history = subscription.hiddenPosts === 'push' ? read : read.filter((post) => !post.hidden);
    holder.acknowledge(request, subscription, history);
    this.#fanout.goLive(subscription, history);
    this.#live?.();
  }
}
