import type { ServerMessage } from '../protocol/events.js';
import { PUBLISH_COMMAND, type Post, type PublishArgs } from '../protocol/types.js';

/** `add-stream-post` data: validated arguments, or a batch line the service will validate. */
export type PublishData = PublishArgs | (Record<string, unknown> & { streamId: string });
import { isTreeFeed } from './endpoint.js';
import {
  Connection,
  type ConnectionHandlers,
  type ConnectionLike,
  type ConnectionOptions,
  type ConnectionState,
  type OpenConnection,
} from './connection.js';
import { ClientError } from './errors.js';
import { setFields } from './publish-args.js';
import { SendPacer, type RateLimitWait } from './pacer.js';

export type PublishOutcome =
  | { ok: true; post: Post; duplicate: boolean; attempts: number }
  | { ok: false; code: string; message: string; status?: number };

interface InFlight {
  /** Numbered in the order posts were given: the order they must reach the service in. */
  seq: number;
  requestId: string;
  frame: string;
  attempts: number;
  /** Sent on the current connection and not answered yet. */
  sent: boolean;
  resolve(outcome: PublishOutcome): void;
  reject(error: ClientError): void;
  /** Stops the clock on this post's reply (see Connection.expectReply). */
  answered?: () => void;
}

/** How long the publisher may wait on the rate limit before it tells (see `onRateLimited`). */
export const RATE_LIMIT_NOTICE_MS = 2_000;

export interface PublisherHandlers {
  onState?(state: ConnectionState): void;
  /** Posts have waited on the service's rate limit for RATE_LIMIT_NOTICE_MS: once per such wait. */
  onRateLimited?(wait: RateLimitWait): void;
}

/** Reconnect attempts in a row before a publisher gives up (about a minute of backoff). */
export const PUBLISH_MAX_ATTEMPTS = 8;

/**
 * Publishes over one connection, pipelined: every command carries a requestId,
 * replies are matched by it (or, from a service that does not echo it, in
 * order). Posts reach the service in the order they were given: they go out
 * paced by the service's rate limit (SendPacer), and one refused with
 * `rate-limited` is sent again before any later one. Unacknowledged posts are
 * resent after a reconnect, with the same idempotency key, so the service
 * publishes each at most once.
 */
export class Publisher {
  readonly connection: ConnectionLike;
  /** Every post given and not yet answered, sent or not. */
  readonly #inFlight = new Map<string, InFlight>();
  /** Posts to send, in the order given. */
  #queue: InFlight[] = [];
  #unanswered = 0;
  readonly #pacer = new SendPacer();
  #drainTimer: NodeJS.Timeout | undefined;
  /** When posts began waiting on the rate limit (performance.now), undefined before they ever did. */
  #waitingSince: number | undefined;
  /** The last time the pacer held a post back. */
  #lastHeldAt = Number.NEGATIVE_INFINITY;
  #answeredWhileWaiting = 0;
  #told = false;
  #nextSeq = 1;
  #failure: ClientError | undefined;
  #markReady!: () => void;
  readonly #firstReady = new Promise<void>((resolve) => {
    this.#markReady = resolve;
  });

  constructor(
    connection: ConnectionOptions | OpenConnection,
    private readonly handlers: PublisherHandlers = {},
  ) {
    if (typeof connection !== 'function' && isTreeFeed(connection.endpoint)) {
      throw new ClientError(
        'usage',
        'a tree feed address (…/graphql?format=tree) only sends; publish over REST or to the service URL',
      );
    }
    const connectionHandlers: ConnectionHandlers = {
      onState: (state) => handlers.onState?.(state),
      onReady: () => {
        this.#markReady();
        // What the lost socket carried unanswered goes again, in its place.
        for (const entry of this.#inFlight.values()) if (entry.sent) this.#requeue(entry);
        this.#unanswered = 0;
        this.#pacer.connectionOpened();
        this.#drain();
      },
      onMessage: (message) => this.#receive(message),
    };
    this.connection =
      typeof connection === 'function'
        ? connection(connectionHandlers)
        : new Connection({ maxAttempts: PUBLISH_MAX_ATTEMPTS, ...connection }, connectionHandlers);
    this.connection.done.then(
      () =>
        this.#failAll(new ClientError('unreachable', 'the connection was closed before every post was acknowledged')),
      (error: ClientError) => this.#failAll(error),
    );
  }

  /** Connects; rejects with a ClientError when the service cannot be reached or refuses the key. */
  async start(): Promise<void> {
    this.connection.start();
    await Promise.race([this.#firstReady, this.connection.done]);
  }

  publish(args: PublishData): Promise<PublishOutcome> {
    if (this.#failure) return Promise.reject(this.#failure);
    const seq = this.#nextSeq++;
    const requestId = String(seq);
    // Serialized once: a resend after a reconnect sends the very same bytes, idempotency key included.
    const frame = JSON.stringify({ event: PUBLISH_COMMAND, data: setFields(args), requestId });
    return new Promise((resolve, reject) => {
      const entry: InFlight = { seq, requestId, frame, attempts: 0, sent: false, resolve, reject };
      this.#inFlight.set(requestId, entry);
      this.#queue.push(entry);
      this.#drain();
    });
  }

  close(): Promise<void> {
    clearTimeout(this.#drainTimer);
    return this.connection.close();
  }

  /** Back into the queue at its place among the posts given after it. */
  #requeue(entry: InFlight): void {
    entry.sent = false;
    entry.answered = undefined;
    const queue = this.#queue;
    let at = queue.length;
    while (at > 0 && queue[at - 1]!.seq > entry.seq) at -= 1;
    queue.splice(at, 0, entry);
  }

  /** Sends what the pacer allows now, and comes back when it allows more. */
  #drain(): void {
    clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    while (this.#queue.length > 0 && this.#failure === undefined) {
      const wait = this.#pacer.delay(this.#unanswered);
      if (wait > 0) {
        this.#waitingOnLimit();
        // Infinity: an answer makes room, and drains again.
        if (Number.isFinite(wait)) this.#drainTimer = setTimeout(() => this.#drain(), Math.ceil(wait));
        return;
      }
      const entry = this.#queue[0]!;
      // Not connected: the next ready drains again.
      if (!this.connection.sendText(entry.frame)) return;
      this.#queue.shift();
      entry.sent = true;
      entry.attempts += 1;
      entry.answered = this.connection.expectReply('ack (the reply to add-stream-post)');
      this.#unanswered += 1;
      this.#pacer.sent();
    }
  }

  /**
   * A paced run holds back each post for a moment, and the queue empties in between: the
   * wait on the limit goes on while holds follow each other within a few seconds (a busy
   * machine may not run this process for a while).
   */
  #waitingOnLimit(): void {
    const now = performance.now();
    const heldBefore = this.#lastHeldAt;
    this.#lastHeldAt = now;
    if (this.#waitingSince === undefined || now - heldBefore > 5_000) {
      this.#waitingSince = now;
      this.#answeredWhileWaiting = 0;
      this.#told = false;
      return;
    }
    const waitingMs = now - this.#waitingSince;
    if (this.#told || waitingMs < RATE_LIMIT_NOTICE_MS) return;
    this.#told = true;
    this.handlers.onRateLimited?.({
      stated: this.#pacer.stated,
      refusals: this.#pacer.refusals,
      answeredPerSecond: (this.#answeredWhileWaiting / waitingMs) * 1000,
      waitingMs,
    });
  }

  #take(requestId: string | undefined): InFlight | undefined {
    let entry = requestId !== undefined ? this.#inFlight.get(requestId) : undefined;
    if (requestId === undefined) {
      for (const candidate of this.#inFlight.values()) {
        if (candidate.sent) {
          entry = candidate;
          break;
        }
      }
    }
    if (!entry?.sent) return undefined;
    this.#inFlight.delete(entry.requestId);
    this.#settled(entry);
    return entry;
  }

  /** A sent post was answered: room for the next. */
  #settled(entry: InFlight): void {
    entry.sent = false;
    entry.answered?.();
    entry.answered = undefined;
    this.#unanswered -= 1;
    this.#answeredWhileWaiting += 1;
  }

  #receive(message: ServerMessage): void {
    if (message.kind === 'connected') {
      this.#pacer.state(message.rateLimit);
      this.#drain();
      return;
    }
    if (message.kind === 'ack') {
      const entry = this.#take(message.requestId);
      if (!entry) return;
      this.#pacer.answered();
      entry.resolve({ ok: true, post: message.post, duplicate: message.duplicate, attempts: entry.attempts });
      this.#drain();
      return;
    }
    if (message.kind !== 'error') return;
    if (message.code === 'rate-limited') {
      const entry = message.requestId !== undefined ? this.#inFlight.get(message.requestId) : undefined;
      if (entry?.sent) {
        this.#settled(entry);
        this.#answeredWhileWaiting -= 1;
        this.#pacer.refused();
        this.#requeue(entry);
        this.#drain();
        return;
      }
    }
    const entry = this.#take(message.requestId);
    if (!entry) return;
    this.#pacer.answered();
    entry.resolve({ ok: false, code: message.code, message: message.message });
    this.#drain();
  }

  #failAll(error: ClientError): void {
    this.#failure = error;
    clearTimeout(this.#drainTimer);
    for (const entry of this.#inFlight.values()) entry.reject(error);
    this.#inFlight.clear();
    this.#queue = [];
  }
}
