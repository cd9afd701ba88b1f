import { connect, type ClientState, type StreamPostsClient } from '../api/client.js';
import type { Endpoint } from '../api/endpoints.js';
import { StreamNames } from '../api/rest-reads.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { AlertEffect, TerminalModel } from './model.js';

export interface SessionOptions {
  urls: string[];
  endpoints: readonly Endpoint[];
  apiKey: string;
  authQuery: boolean;
  reconnect: boolean;
  timeoutMs: number;
  streams: string[] | undefined;
  last: number;
  model: TerminalModel;
  /** Something changed that the screen should show soon. */
  changed: () => void;
  /** What an alert rule asks for (bell, notify, exec). */
  onAlert: (effect: AlertEffect) => void;
  /** Told once, when the first subscription is acknowledged. */
  onSubscribed?: () => void;
}

/**
 * The feed, through the library as any program would get it: `connect`, `subscribe`,
 * and the subscription's own reconnects (nothing lost or repeated across them). `r`
 * starts a new connection at once; its replay of the recent past is dropped by the model
 * where already shown.
 */
export class Session {
  readonly #options: SessionOptions;
  #client: StreamPostsClient | undefined;
  #restart = false;
  #stopped = false;
  #dialect: 'hosted' | 'ours' | undefined;
  /** When the first subscription was acknowledged, on the service's clock (epoch ms). */
  #since = Number.POSITIVE_INFINITY;

  constructor(options: SessionOptions) {
    this.#options = options;
  }

  get dialect(): 'hosted' | 'ours' | undefined {
    return this.#dialect;
  }

  #onState = (state: ClientState): void => {
    const { model } = this.#options;
    if (state.kind === 'connecting') model.setConnection({ kind: 'connecting', attempt: state.attempt });
    else if (state.kind === 'ready') {
      // Connected once the subscription is acknowledged: posts published before that are not ours to see.
      model.setConnection({ kind: 'subscribing' });
      if (this.#client) model.setServiceTime(this.#client.serverTime);
    } else
      model.setConnection({
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
    while (!this.#stopped) {
      this.#restart = false;
      const client = await connect({
        url: this.#options.urls,
        apiKey: this.#options.apiKey,
        authQuery: this.#options.authQuery,
        reconnect: this.#options.reconnect,
        timeoutMs: this.#options.timeoutMs,
        onState: this.#onState,
      });
      this.#client = client;
      const since = this.#since;
      // The hosted service's `connected` names no user; ours does.
      this.#dialect = client.userId === undefined ? 'hosted' : 'ours';
      model.setServiceTime(client.serverTime);
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
            model.setConnection({ kind: 'connected', reconnected: ack.reconnected || !wasFirst });
            for (const id of ack.streamIds) {
              model.knowStream(id);
              void names.of(id).then((name) => {
                if (name !== undefined) {
                  model.knowStream(id, name);
                  this.#options.changed();
                }
              });
            }
            model.setServiceTime(client.serverTime);
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
          for (const effect of model.add(post, wasFirst && event.history)) this.#options.onAlert(effect);
          this.#options.changed();
        }
      } finally {
        await client.close();
      }
      if (!this.#restart) break;
    }
  }

  /** `r`: a new connection now, whatever the current one is doing. */
  reconnectNow(): void {
    if (this.#stopped || this.#client === undefined) return;
    this.#restart = true;
    this.#options.model.setConnection({ kind: 'connecting', attempt: 0 });
    void this.#client.close();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#client?.close();
  }
}
