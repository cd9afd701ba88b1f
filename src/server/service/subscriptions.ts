import { CLOSE_POLICY_VIOLATION, CLOSE_UNAUTHORIZED, UNAUTHORIZED_CLOSE_REASON } from '../../protocol/close-codes.js';
import { ProtocolError, unauthorizedMessage } from '../../protocol/errors.js';
import type { SubscribeArgs } from '../../protocol/types.js';
import { Subscription, type FanOut, type Format, type HiddenPosts, type Subscriber } from '../ws/fanout.js';
import { keyIdOf, type KeyLimits } from '../ws/key-limits.js';
import type { TokenBucket } from '../ws/rate-limiter.js';
import {
  isPending,
  type Awaitable,
  type Identity,
  type PostRecord,
  type StreamRecord,
  type UserRecord,
} from '../stores/store.js';
import type { ResolvedSubscription, StreamPostsService } from './service.js';

/** A connection let in: who it is, and the key's place among its connections (given back by `leave`). */
export interface Admission {
  identity: Identity;
  user: UserRecord;
  keyId: string;
  /** The key's rate, shared by all its connections; undefined when the per-key limit is off. */
  keyBucket: TokenBucket | undefined;
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
export interface SubscriptionHolder extends Subscriber {
  /** Once true, a subscribe still under way registers nothing and says nothing. */
  readonly closed: boolean;
  /** Subscriptions held now, and places taken by subscribes under way: what the cap counts. */
  readonly subscriptionCount: number;
  /** The held subscription a new one of these streams in this format replaces; undefined: it adds one. */
  repeatOf(format: Format, streams: readonly StreamRecord[]): Subscription | undefined;
  /** Keeps `subscription`, registered in the fan-out in this same turn, in place of `replaced`. */
  hold(subscription: Subscription, replaced: Subscription | undefined): void;
  /** The history is read (without what waits for its release): tell the peer; it is sent right after, then live posts. */
  acknowledge(request: SubscribeRequest, subscription: Subscription, history: readonly PostRecord[]): void;
}

export interface SubscriptionServiceOptions {
  service: StreamPostsService;
  fanout: FanOut;
  keyLimits: KeyLimits;
  /** 0: no cap. */
  maxSubscriptionsPerConnection: number;
}

/**
 * The subscription protocol once, for every transport (the WebSocket session and its URL forms
 * and tree feeds, GraphQL): who is let in, and the way from a subscribe to live posts. The
 * transports only encode, write and close.
 */
export class SubscriptionService {
  readonly #service: StreamPostsService;
  readonly #fanout: FanOut;
  readonly #keyLimits: KeyLimits;
  readonly #maxSubscriptions: number;

  constructor(options: SubscriptionServiceOptions) {
    this.#service = options.service;
    this.#fanout = options.fanout;
    this.#keyLimits = options.keyLimits;
    this.#maxSubscriptions = options.maxSubscriptionsPerConnection;
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
    const keyId = keyIdOf(identity);
    const keyLimits = this.#keyLimits;
    if (!keyLimits.openConnection(keyId)) {
      return new Refusal(
        'limit-exceeded',
        `this key already has ${keyLimits.maxConnections} open connections, the most the server allows`,
        CLOSE_POLICY_VIOLATION,
        'too many connections for this key',
      );
    }
    return { identity, user, keyId, keyBucket: keyLimits.bucket(keyId) };
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
  subscribe(holder: SubscriptionHolder, request: SubscribeRequest): Promise<void> | undefined {
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
    holder: SubscriptionHolder,
    request: SubscribeRequest,
    resolved: ResolvedSubscription,
    replaced: Subscription | undefined,
  ): Promise<void> | undefined {
    if (holder.closed) return undefined;
    const subscription = new Subscription(holder, request.format, resolved.user, resolved.streams, request.hiddenPosts);
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

  #goLive(holder: SubscriptionHolder, request: SubscribeRequest, subscription: Subscription, read: PostRecord[]): void {
    if (holder.closed) return;
    // Held back while hidden: such a post reaches this subscription at its release.
    const history = subscription.hiddenPosts === 'push' ? read : read.filter((post) => !post.hidden);
    holder.acknowledge(request, subscription, history);
    this.#fanout.goLive(subscription, history);
  }
}
