import { type ClientState, type StreamPostsClient, StreamPostsError } from '../index.js';
import {
  backoffDelay,
  openClient,
  type BackoffOptions,
  type ClientPolicy,
  type Endpoint,
  StreamNames,
} from '../api/internal.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import { Latencies } from './latency.js';
import type { ConnectionView, TerminalModel } from './model.js';
import type { TerminalEvent } from './update.js';

export interface SessionOptions {
  endpoints: readonly Endpoint[];
  apiKey: string;
  authQuery: boolean;
  reconnect: boolean;
  timeoutMs: number;
  streams: string[] | undefined;
  last: number;
  /** The state's clock, read: the session's changes go through `step`. */
  model: Pick<TerminalModel, 'now' | 'clockOffsetMs'>;
  /** Something changed that the screen should show soon. */
  changed: () => void;
  /** What the connection brings (posts, its state, the streams and the service's clock): the caller steps the state with it. */
  step: (event: TerminalEvent) => void;
  /** Told once, when the first subscription is acknowledged. */
  onSubscribed?: () => void;
}

/**
 * Someone watches the screen for the feed to come back: the wait between attempts stays
 * short (with jitter, so terminals dropped together do not come back together).
 */
export const TERMINAL_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 5_000 };
const TERMINAL_POLICY: ClientPolicy = { awaitFirstWord: true, retryReplyTimeouts: true, backoff: TERMINAL_BACKOFF };

/**
 * The feed, through the library as any program would get it: `connect`, `subscribe`,
 * and the subscription's own reconnects (nothing lost or repeated across them). `r`
 * starts a new connection at once; its replay of the recent past is dropped by the model
 * where already shown. A new connection that fails is tried again, with the same back-off,
 * until one opens or `r` tries at once.
 */
export class Session {
  readonly #options: SessionOptions;
  #client: StreamPostsClient | undefined;
  #restart = false;
  #stopped = false;
  readonly #latencies = new Latencies();
  /** Ends the wait before the next attempt of a connection of our own (`r`, `stop`). */
  #wake: (() => void) | undefined;
  #dialect: 'hosted' | 'ours' | undefined;
  /** When the first subscription was acknowledged, on the service's clock (epoch ms). */
  #since = Number.POSITIVE_INFINITY;

  constructor(options: SessionOptions) {
    this.#options = options;
  }

  #connection(connection: ConnectionView): void {
    this.#options.step({ kind: 'connection', connection });
  }

  get dialect(): 'hosted' | 'ours' | undefined {
    return this.#dialect;
  }

  /** The median latency of the last live posts (see Latencies), in ms. */
  medianLatency(): number | undefined {
    return this.#latencies.median();
  }

  #onState = (state: ClientState): void => {
    const { model } = this.#options;
    if (state.kind === 'connecting') this.#connection({ kind: 'connecting', attempt: state.attempt });
    else if (state.kind === 'ready') {
      // Connected once the subscription is acknowledged: posts published before that are not ours to see.
      this.#connection({ kind: 'subscribing' });
      if (this.#client) this.#options.step({ kind: 'service-time', iso: this.#client.serverTime });
    } else
      this.#connection({
        kind: 'reconnecting',
        attempt: state.attempt,
        delayMs: state.delayMs,
        sinceMs: model.now(),
      });
    this.#options.changed();
  };

  /** Runs until `stop`, or until the connection is lost for good (which it throws). */
  async run(): Promise<void> {
    const { model } = this.#options;
    const names = new StreamNames(this.#options.endpoints, this.#options.apiKey, this.#options.timeoutMs);
    let first = true;
    let failures = 0;
    while (!this.#stopped) {
      this.#restart = false;
      let client: StreamPostsClient;
      try {
        client = await openClient(
          this.#options.endpoints,
          {
            apiKey: this.#options.apiKey,
            authQuery: this.#options.authQuery,
            reconnect: this.#options.reconnect,
            timeoutMs: this.#options.timeoutMs,
            onState: this.#onState,
          },
          TERMINAL_POLICY,
        );
      } catch (error) {
        // The first connection's failure, and a refused key, end the command as before.
        const passing =
          error instanceof StreamPostsError &&
          (error.code === 'unreachable' || error.code === 'timeout' || error.code === 'closed');
        if (first || !passing || !this.#options.reconnect || this.#stopped) throw error;
        failures += 1;
        const delayMs = backoffDelay(failures - 1, TERMINAL_BACKOFF);
        this.#connection({ kind: 'reconnecting', attempt: failures, delayMs, sinceMs: model.now() });
        this.#options.changed();
        await this.#wait(delayMs);
        continue;
      }
      failures = 0;
      this.#client = client;
      const since = this.#since;
      // The hosted service's `connected` names no user; ours does.
      this.#dialect = client.userId === undefined ? 'hosted' : 'ours';
      this.#options.step({ kind: 'service-time', iso: client.serverTime });
      const wasFirst = first;
      first = false;
      try {
        if (this.#stopped) return;
        const subscription = client.subscribe({
          format: 'post',
          ...(this.#options.streams === undefined ? {} : { streamIds: this.#options.streams }),
          // A new connection of our own asks for all the recent past: what was shown is dropped by id.
          lastPosts: wasFirst ? this.#options.last : MAX_LAST_POSTS,
          onSubscribed: (ack) => {
            this.#connection({ kind: 'connected', reconnected: ack.reconnected || !wasFirst });
            for (const id of ack.streamIds) {
              this.#options.step({ kind: 'stream', id });
              void names.of(id).then((name) => {
                if (name !== undefined) {
                  this.#options.step({ kind: 'stream', id, name });
                  this.#options.changed();
                }
              });
            }
            this.#options.step({ kind: 'service-time', iso: client.serverTime });
            this.#options.changed();
            if (wasFirst && !ack.reconnected) {
              // On the service's clock, as the posts' times are.
              this.#since = model.now() + (model.clockOffsetMs ?? 0);
              this.#options.onSubscribed?.();
            }
          },
        });
        for await (const event of subscription) {
          if (event.format !== 'post') continue;
          // Our dialect names the stream: only the hosted one's posts wait for a lookup.
          const named = event.post.streamName !== event.post.streamId && event.post.streamName !== '';
          const post = named ? event.post : await names.named(event.post);
          // Only the first connection's history is the past the user asked for; a replay after `r` is news missed.
          // The replay after `r` brings the recent past: only what came after this terminal started is news.
          if (!wasFirst && event.history && !(Date.parse(post.createdAt) >= since)) continue;
          if (!event.history && post.text !== null)
            this.#latencies.add(
              model.now() + (model.clockOffsetMs ?? 0) - Date.parse(post.releaseAt ?? post.createdAt),
            );
          this.#options.step({ kind: 'post', post, history: wasFirst && event.history });
          this.#options.changed();
        }
      } finally {
        await client.close();
      }
      if (!this.#restart) break;
    }
  }

  /** Resolves after `ms`, or at once when woken (`r`, `stop`). */
  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  /** `r`: a new connection now, whatever the current one is doing. */
  reconnectNow(): void {
    if (this.#stopped || this.#client === undefined) return;
    if (this.#wake !== undefined) {
      this.#connection({ kind: 'connecting', attempt: 0 });
      return this.#wake();
    }
    this.#restart = true;
    this.#connection({ kind: 'connecting', attempt: 0 });
    void this.#client.close();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#client?.close();
  }
}
