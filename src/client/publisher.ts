import type { ServerMessage } from '../protocol/events.js';
import { PUBLISH_COMMAND, type Post, type PublishArgs } from '../protocol/types.js';

/** `add-stream-post` data: validated arguments, or a batch line the service will validate. */
export type PublishData = PublishArgs | (Record<string, unknown> & { streamId: string });
import { backoffDelay } from './backoff.js';
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

export type PublishOutcome =
  | { ok: true; post: Post; duplicate: boolean; attempts: number }
  | { ok: false; code: string; message: string; status?: number };

interface InFlight {
  requestId: string;
  frame: string;
  attempts: number;
  rateLimited: number;
  resolve(outcome: PublishOutcome): void;
  reject(error: ClientError): void;
  retry?: NodeJS.Timeout;
  /** Stops the clock on this post's reply (see Connection.expectReply). */
  answered?: () => void;
}

const RATE_LIMIT_BACKOFF = { initialMs: 250, maxMs: 5_000 };
/** Reconnect attempts in a row before a publisher gives up (about a minute of backoff). */
export const PUBLISH_MAX_ATTEMPTS = 8;

/**
 * Publishes over one connection, pipelined: every command carries a requestId,
 * replies are matched by it (or, from a service that does not echo it, in
 * order). Unacknowledged posts are resent after a reconnect and after a
 * `rate-limited` reply, with the same idempotency key, so the service
 * publishes each at most once.
 */
export class Publisher {
  readonly connection: ConnectionLike;
  readonly #inFlight = new Map<string, InFlight>();
  #nextId = 1;
  #failure: ClientError | undefined;
  #markReady!: () => void;
  readonly #firstReady = new Promise<void>((resolve) => {
    this.#markReady = resolve;
  });

  constructor(connection: ConnectionOptions | OpenConnection, onState?: (state: ConnectionState) => void) {
    if (typeof connection !== 'function' && isTreeFeed(connection.endpoint)) {
      throw new ClientError(
        'usage',
        'a tree feed address (…/graphql?format=tree) only sends; publish over REST or to the service URL',
      );
    }
    const handlers: ConnectionHandlers = {
      onState,
      onReady: () => {
        this.#markReady();
        for (const entry of this.#inFlight.values()) {
          if (entry.retry === undefined) this.#send(entry);
        }
      },
      onMessage: (message) => this.#receive(message),
    };
    this.connection =
      typeof connection === 'function'
        ? connection(handlers)
        : new Connection({ maxAttempts: PUBLISH_MAX_ATTEMPTS, ...connection }, handlers);
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
    const requestId = String(this.#nextId++);
    // Serialized once: a resend after a reconnect sends the very same bytes, idempotency key included.
    const frame = JSON.stringify({ event: PUBLISH_COMMAND, data: setFields(args), requestId });
    return new Promise((resolve, reject) => {
      const entry: InFlight = { requestId, frame, attempts: 0, rateLimited: 0, resolve, reject };
      this.#inFlight.set(entry.requestId, entry);
      this.#send(entry);
    });
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  #send(entry: InFlight): void {
    entry.retry = undefined;
    if (!this.connection.sendText(entry.frame)) return;
    entry.attempts += 1;
    entry.answered = this.connection.expectReply('ack (the reply to add-stream-post)');
  }

  #take(requestId: string | undefined): InFlight | undefined {
    const entry = requestId !== undefined ? this.#inFlight.get(requestId) : this.#inFlight.values().next().value;
    if (entry) {
      this.#inFlight.delete(entry.requestId);
      entry.answered?.();
    }
    return entry;
  }

  #receive(message: ServerMessage): void {
    if (message.kind === 'ack') {
      const entry = this.#take(message.requestId);
      entry?.resolve({ ok: true, post: message.post, duplicate: message.duplicate, attempts: entry.attempts });
      return;
    }
    if (message.kind !== 'error') return;
    if (message.code === 'rate-limited') {
      const entry = message.requestId !== undefined ? this.#inFlight.get(message.requestId) : undefined;
      if (entry) {
        entry.answered?.();
        const delay = backoffDelay(entry.rateLimited++, RATE_LIMIT_BACKOFF);
        entry.retry = setTimeout(() => this.#send(entry), delay);
        return;
      }
    }
    this.#take(message.requestId)?.resolve({ ok: false, code: message.code, message: message.message });
  }

  #failAll(error: ClientError): void {
    this.#failure = error;
    for (const entry of this.#inFlight.values()) {
      clearTimeout(entry.retry);
      entry.reject(error);
    }
    this.#inFlight.clear();
  }
}
