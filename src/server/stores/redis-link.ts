import { createClient, RESP_TYPES } from 'redis';
import { CommandDeadline } from './command-deadline.js';
import type { RedisScript } from './redis-scripts.js';
import type { StoreHealth } from './store-health.js';

export type RedisClient = ReturnType<typeof createClient>;

const MAX_RECONNECT_DELAY_MS = 2_000;
/** A command with no reply by then fails (`unavailable`), as with the client library's default. */
const COMMAND_TIMEOUT_MS = 5_000;
/** Replies as bytes (uploaded media). */
const AS_BYTES = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const;

export interface RedisLinkOptions {
  /** `redis://[:password@]host:port[/db]`. */
  url: string;
  /** Every script's first argument: the keyspace it works in. */
  prefix: string;
  /** Told whether each command reached Redis. */
  health: StoreHealth;
  /** The command connection is back after it was lost (not its first connection). */
  onReconnected: () => void;
  onError: (error: Error) => void;
  /** The feed's connection: the same server, its own socket (a subscribed client sends no commands). */
  onFeedReady: () => void;
  onFeedError: (error: Error) => void;
}

/**
 * The Redis store's two connections (commands, and the event feed) and how a command or a
 * script is sent on them: under one deadline, with the health told of every outcome.
 */
export class RedisLink {
  readonly client: RedisClient;
  readonly subscriber: RedisClient;
  readonly deadline = new CommandDeadline(COMMAND_TIMEOUT_MS);
  readonly #prefix: string;
  readonly #health: StoreHealth;
  readonly #cachedScripts = new Set<string>();
  #evalsSent = 0;

  constructor(options: RedisLinkOptions) {
    this.#prefix = options.prefix;
    this.#health = options.health;
    let everReady = false;
    this.client = createClient({
      url: options.url,
      // A command while Redis is away fails at once (`unavailable`) instead of waiting in a queue.
      disableOfflineQueue: true,
      // The limit on each command is the deadline's, one timer for all (not one per command).
      commandOptions: { timeout: 0 },
      socket: {
        // The first connection must succeed: a wrong URL is reported, not retried forever.
        reconnectStrategy: (retries, cause) =>
          everReady ? Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) + Math.floor(Math.random() * 100) : cause,
      },
    });
    this.client.on('ready', () => {
      // A restarted Redis starts with an empty script cache.
      this.#cachedScripts.clear();
      if (everReady) options.onReconnected();
      everReady = true;
    });
    this.client.on('error', options.onError);
    this.subscriber = this.client.duplicate();
    this.subscriber.on('error', options.onFeedError);
    this.subscriber.on('ready', options.onFeedReady);
  }

  /** A plain command under the deadline; Redis away or too slow is `unavailable`. */
  async command<T>(reply: Promise<T>): Promise<T> {
    try {
      const result = await this.deadline.bound(reply);
      this.#health.reachable();
      return result;
    } catch (error) {
      throw this.#health.failed(error);
    }
  }

  /**
   * Scripts sent in full once and known to be in Redis's script cache since the client last
   * connected: only these go by digest. Calls are numbered as they are sent, so a NOSCRIPT
   * answer (the cache flushed by hand) tells whether a call sent later could overtake its retry.
   */
  async eval(script: RedisScript, args: (string | number)[]): Promise<unknown[]> {
    const options = { arguments: [this.#prefix, ...args.map(String)] };
    try {
      if (this.#cachedScripts.has(script.sha)) {
        const sent = ++this.#evalsSent;
        try {
          const reply = (await this.deadline.bound(this.client.evalSha(script.sha, options))) as unknown[];
          this.#health.reachable();
          return reply;
        } catch (error) {
          if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
          this.#cachedScripts.clear();
          // Calls sent after this one ran before its retry would: a connection's pipelined
          // publishes stored out of order. Refused instead (nothing stored, a retry succeeds).
          if (this.#evalsSent !== sent) throw error;
        }
      }
      this.#evalsSent += 1;
      const reply = (await this.deadline.bound(this.client.eval(script.source, options))) as unknown[];
      this.#cachedScripts.add(script.sha);
      this.#health.reachable();
      return reply;
    } catch (error) {
      if (error instanceof Error && /^(ERR|WRONGTYPE)/.test(error.message)) throw error;
      throw this.#health.failed(error);
    }
  }

  putBytes(key: string, bytes: Buffer): Promise<void> {
    return this.command(this.client.hSet(key, 'bytes', bytes)).then(() => undefined);
  }

  /**
   * Fields of a hash as bytes. Asked for on this one command (withTypeMapping would build a second
   * client object on this one as its prototype; every other command keeps the client as it is).
   */
  getBytes(key: string, fields: string[]): Promise<(Buffer | null)[]> {
    return this.command(this.client.sendCommand<(Buffer | null)[]>(['HMGET', key, ...fields], AS_BYTES));
  }

  /** Whether both connections are up. */
  get ready(): boolean {
    return this.client.isReady && this.subscriber.isReady;
  }

  async close(): Promise<void> {
    this.deadline.close();
    for (const client of [this.subscriber, this.client]) {
      if (client.isReady) await client.close().catch(() => client.destroy());
      else if (client.isOpen) client.destroy();
    }
  }
}
