import type { RateLimit, ServerMessage } from '../protocol/events.js';
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
import { ClientError, DEFAULT_TIMEOUT_MS, formatWait, mayBePublished } from './errors.js';
import { setFields } from './publish-args.js';
import { SendPacer, type RateLimitWait } from './pacer.js';
import { ReplyWaits } from './reply-waits.js';
import { timerDelay } from './timer-delay.js';

export type PublishOutcome =
  | { ok: true; post: Post; duplicate: boolean; attempts: number }
  | { ok: false; code: string; message: string; status?: number; idempotencyKey?: string };

const ACK = 'ack (the reply to add-stream-post)';

interface InFlight {
  /** Numbered in the order posts were given: the order they must reach the service in. */
  seq: number;
  requestId: string;
  frame: string;
  attempts: number;
  /** The key the service deduplicates its resends by, when the post has one. */
  idempotencyKey: string | undefined;
  /** Sent on the current connection and not answered yet. */
  sent: boolean;
  /** Quarters of the ack timeout its ack has been late (see Publisher.#ackLate). */
  late: number;
  resolve(outcome: PublishOutcome): void;
  reject(error: ClientError): void;
  /** Stops the clock on this post's ack. */
  answered?: () => void;
}

/** How long the publisher may wait on the rate limit before it tells (see `onRateLimited`). */
export const RATE_LIMIT_NOTICE_MS = 2_000;

export interface PublisherOptions {
  onState?(state: ConnectionState): void;
  /** Posts have waited on the service's rate limit for RATE_LIMIT_NOTICE_MS: once per such wait. */
  onRateLimited?(wait: RateLimitWait): void;
  /**
   * The longest a sent post waits for its ack, resends included (default: the connection's
   * `timeoutMs`); then it fails with `timeout`, naming its idempotency key.
   */
  ackTimeoutMs?: number;
  /** Whether a late ack may be sought on a new connection (default: the connection's `reconnect`). */
  reconnect?: boolean;
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
 * publishes each at most once. An ack may be lost while the connection lives on:
 * a post whose ack is late is sent again (see #ackLate), and the service's
 * deduplication answers the resend with the post the first attempt stored.
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
  /** A stated rate too slow to publish anything in time: every publish fails with it until a new `connected`. */
  #tooSlow: ClientError | undefined;
  readonly #ackTimeoutMs: number;
  readonly #reconnect: boolean;
  readonly #ackWaits: ReplyWaits<InFlight>;
  /**
   * Whether replies carry the requestId they answer: only then may a post be sent twice on
   * one connection, since two replies to one post would otherwise be matched to two posts.
   */
  #echoesRequestIds = false;
  #markReady!: () => void;
  readonly #firstReady = new Promise<void>((resolve) => {
    this.#markReady = resolve;
  });

  constructor(
    connection: ConnectionOptions | OpenConnection,
    private readonly handlers: PublisherOptions = {},
  ) {
    const own: Partial<ConnectionOptions> = typeof connection === 'function' ? {} : connection;
    this.#ackTimeoutMs = handlers.ackTimeoutMs ?? own.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#reconnect = handlers.reconnect ?? own.reconnect ?? true;
    this.#ackWaits = new ReplyWaits(
      this.#ackTimeoutMs / LATE_STEPS,
      (wait) => this.#ackLate(wait.context),
      () => performance.now(),
    );
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
        this.#echoesRequestIds = false;
        // What the lost socket carried unanswered goes again, in its place. Its ack starts
        // over, unless it was a late ack that moved it here.
        for (const entry of this.#inFlight.values()) {
          if (!entry.sent) continue;
          this.#requeue(entry);
          if (entry.late < MOVE_STEP) entry.late = 0;
        }
        this.#ackWaits.clear();
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
    const failure = this.#failure ?? this.#tooSlow;
    if (failure) return Promise.reject(failure);
    const seq = this.#nextSeq++;
    const requestId = String(seq);
    // Serialized once: a resend sends the very same bytes, idempotency key included.
    const frame = JSON.stringify({ event: PUBLISH_COMMAND, data: setFields(args), requestId });
    const key = (args as { idempotencyKey?: unknown }).idempotencyKey;
    const idempotencyKey = typeof key === 'string' ? key : undefined;
    return new Promise((resolve, reject) => {
      const entry: InFlight = {
        seq,
        requestId,
        frame,
        attempts: 0,
        idempotencyKey,
        sent: false,
        late: 0,
        resolve,
        reject,
      };
      this.#inFlight.set(requestId, entry);
      this.#queue.push(entry);
      this.#drain();
    });
  }

  close(): Promise<void> {
    clearTimeout(this.#drainTimer);
    this.#ackWaits.clear();
    return this.connection.close();
  }

  /** Back into the queue at its place among the posts given after it. */
  #requeue(entry: InFlight): void {
    entry.sent = false;
    entry.answered?.();
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
        if (Number.isFinite(wait)) this.#drainTimer = setTimeout(() => this.#drain(), timerDelay(wait));
        return;
      }
      const entry = this.#queue[0]!;
      // Not connected: the next ready drains again.
      if (!this.connection.sendText(entry.frame)) return;
      this.#queue.shift();
      entry.sent = true;
      entry.attempts += 1;
      entry.answered = this.#ackWaits.add(ACK, entry);
      this.#unanswered += 1;
      this.#pacer.sent();
    }
  }

  /**
   * A sent post's ack is a quarter of the ack timeout later than it was: at one quarter it
   * is sent again on the same connection, at two on a new one (the connection is dropped
   * and reopened, as for any lost connection), at three again there; at four the post
   * fails, naming its idempotency key. Returns whether to wait another quarter.
   */
  #ackLate(entry: InFlight): boolean {
    if (!entry.sent || this.#inFlight.get(entry.requestId) !== entry) return false;
    // Nothing is read while paused: the ack may be waiting in the socket. A lost socket is no
    // late ack: the next ready sends the post again, its wait started over.
    if (this.connection.paused || !this.connection.isOpen) return true;
    entry.late += 1;
    if (entry.late >= LATE_STEPS) {
      this.#giveUp(entry);
      return false;
    }
    // Without a key the service could not tell a resend from a new post.
    if (entry.idempotencyKey === undefined) return true;
    if (entry.late === MOVE_STEP && this.#reconnect) {
      entry.answered = undefined;
      this.connection.drop(`no ${ACK} within ${formatWait(this.#ackTimeoutMs / 2)}`);
      return false;
    }
    this.#resendHere(entry);
    return true;
  }

  /** The same frame again on this connection, when the pacer has room for it and replies can be told apart. */
  #resendHere(entry: InFlight): void {
    if (!this.#echoesRequestIds || this.#pacer.delay(0) > 0 || !this.connection.sendText(entry.frame)) return;
    entry.attempts += 1;
    this.#pacer.sent();
  }

  #giveUp(entry: InFlight): void {
    this.#inFlight.delete(entry.requestId);
    this.#settled(entry);
    const key = entry.idempotencyKey;
    const words = `timed out after ${formatWait(this.#ackTimeoutMs)} waiting for ${ACK}`;
    entry.reject(
      key === undefined
        ? new ClientError('timeout', words)
        : new ClientError('timeout', `${words}; ${mayBePublished(key)}`, undefined, { idempotencyKey: key }),
    );
    this.#drain();
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
    if (entry) this.#echoesRequestIds = true;
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
      // A service of this contract (it states its clock) repeats every command's requestId.
      if (message.serverTime !== undefined) this.#echoesRequestIds = true;
      this.#pacer.state(message.rateLimit);
      this.#tooSlow = this.#rateTooSlow(message.rateLimit);
      if (this.#tooSlow) this.#failEach(this.#tooSlow);
      else this.#drain();
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

  /**
   * A stated rate under one command per ack timeout: the pacer would hold every post past
   * the time it may wait, so nothing is sent.
   */
  #rateTooSlow(limit: RateLimit | undefined): ClientError | undefined {
    if (limit === undefined || limit.perSecond * (this.#ackTimeoutMs / 1000) >= 1) return undefined;
    return new ClientError(
      'refused',
      `the service states a rate limit of ${limit.perSecond} commands per second (connected.rateLimit.perSecond): fewer than one post within ${formatWait(this.#ackTimeoutMs)}, the longest wait for an ack; nothing more is sent`,
      'rate-limited',
    );
  }

  #failAll(error: ClientError): void {
    this.#failure = error;
    this.#failEach(error);
  }

  /** Every post given and not answered fails with `error`. */
  #failEach(error: ClientError): void {
    clearTimeout(this.#drainTimer);
    this.#ackWaits.clear();
    for (const entry of this.#inFlight.values()) entry.reject(error);
    this.#inFlight.clear();
    this.#queue = [];
    this.#unanswered = 0;
  }
}

/** The ack timeout in quarters: the post fails after the last. */
const LATE_STEPS = 4;
/** The quarter at which a late ack is sought on a new connection. */
const MOVE_STEP = 2;
