import { ClientClosedError, ClientOfflineError, createClient, ErrorReply, RESP_TYPES } from 'redis';
import { ProtocolError } from '../../../protocol/errors.js';
import { CommandDeadline, CommandTimeoutError } from './command-deadline.js';
import type { RedisScript } from './redis-scripts.js';
import type { StoreHealth } from './store-health.js';

export type RedisClient = ReturnType<typeof createClient>;

const MAX_RECONNECT_DELAY_MS = 2_000;
/** A command with no reply by then fails (`unavailable`), as with the client library's default. */
const COMMAND_TIMEOUT_MS = 5_000;
/**
 * How long a change waits for Redis's word on it before its outcome is called unknown. Past
 * its own deadline (COMMAND_TIMEOUT_MS, on Redis's clock) a change cannot be made, so Redis
 * answers either way as soon as it runs again: a pause of a fail-over, a slow command.
 */
const OUTCOME_WAIT_MS = 20_000;
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
 * A change whose outcome nobody can tell: it may have been made. `connectionLost`: its
 * connection dropped (else Redis kept it past OUTCOME_WAIT_MS, and may be holding it still).
 */
export class UnknownOutcome extends ProtocolError {
  constructor(
    command: string | undefined,
    readonly connectionLost: boolean,
  ) {
    super(
      'internal',
      "the service's store (Redis) stopped answering while it ran this command: it may have been stored; retry with the same idempotency key (stored at most once), or look at the stream's history first",
      command,
    );
  }
}

/**
 * The Redis store's two connections (commands, and the event feed) and how a command or a
 * script is sent on them: under one deadline, with the health told of every outcome.
 */
export class RedisLink {
  readonly client: RedisClient;
  readonly subscriber: RedisClient;
  readonly deadline = new CommandDeadline(COMMAND_TIMEOUT_MS);
  readonly #outcomeWait = new CommandDeadline(OUTCOME_WAIT_MS);
  /** Redis's clock less this machine's, as its `TIME` last said (0 until read: one machine's clock). */
  #redisClockOffsetMs = 0;
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

  /** A script under the deadline; Redis away or too slow is `unavailable`. */
  async eval(script: RedisScript, args: (string | number)[]): Promise<unknown[]> {
    try {
      return await this.#eval(script, args, (reply) => this.deadline.bound(reply));
    } catch (error) {
      if (error instanceof Error && /^(ERR|WRONGTYPE)/.test(error.message)) throw error;
      throw this.#health.failed(error);
    }
  }

  /**
   * A script that makes a change and refuses to make it once Redis's clock has passed the
   * deadline it is given (`changeDeadline()`), so Redis's answer is awaited past that deadline
   * instead of guessed: a refusal then says truly that nothing was stored. Only when no answer
   * comes (the connection lost with it sent, or none within OUTCOME_WAIT_MS) is the outcome
   * unknown, and said to be.
   */
  async change(script: RedisScript, args: (string | number)[], command?: string): Promise<unknown[]> {
    const late = (error: Error) => this.#health.enter('unreachable', error.message);
    try {
      return await this.#eval(script, args, (reply) => this.#outcomeWait.bound(this.deadline.late(reply, late)));
    } catch (error) {
      if (error instanceof Error && /^(ERR|WRONGTYPE)/.test(error.message)) throw error;
      // Redis's own refusal (out of memory, no script), or never sent: nothing was changed.
      if (error instanceof ErrorReply || error instanceof ClientOfflineError || error instanceof ClientClosedError)
        throw this.#health.failed(error, command);
      this.#health.enter('unreachable', error instanceof Error ? error.message : String(error));
      throw new UnknownOutcome(command, !(error instanceof CommandTimeoutError));
    }
  }

  /** Until when, on Redis's clock, a change sent now may be made. */
  changeDeadline(): number {
    return this.redisNow() + COMMAND_TIMEOUT_MS;
  }

  /** Redis's clock, as last read. */
  redisNow(): number {
    return Date.now() + this.#redisClockOffsetMs;
  }

  /** How long after an unknown outcome a change may be sent again to learn it. */
  get outcomeWaitMs(): number {
    return OUTCOME_WAIT_MS;
  }

  /**
   * Reads Redis's clock (`TIME`), for the deadlines of changes. A failure keeps the last reading
   * and says nothing of the store's health: what the other commands meet says that.
   */
  async readClock(): Promise<void> {
    const sent = Date.now();
    const reply = await this.deadline.bound(this.client.sendCommand<[string, string]>(['TIME'])).catch(() => undefined);
    if (reply === undefined) return;
    const [seconds, micros] = reply;
    const received = Date.now();
    this.#redisClockOffsetMs =
      Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Math.round((sent + received) / 2);
  }

  /**
   * Scripts sent in full once and known to be in Redis's script cache since the client last
   * connected: only these go by digest. Calls are numbered as they are sent, so a NOSCRIPT
   * answer (the cache flushed by hand) tells whether a call sent later could overtake its retry.
   */
  async #eval(
    script: RedisScript,
    args: (string | number)[],
    wait: (reply: Promise<unknown>) => Promise<unknown>,
  ): Promise<unknown[]> {
    const options = { arguments: [this.#prefix, ...args.map(String)] };
    if (this.#cachedScripts.has(script.sha)) {
      const sent = ++this.#evalsSent;
      try {
        const reply = (await wait(this.client.evalSha(script.sha, options))) as unknown[];
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
    const reply = (await wait(this.client.eval(script.source, options))) as unknown[];
    this.#cachedScripts.add(script.sha);
    this.#health.reachable();
    return reply;
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
    this.#outcomeWait.close();
    for (const client of [this.subscriber, this.client]) {
      if (client.isReady) await client.close().catch(() => client.destroy());
      else if (client.isOpen) client.destroy();
    }
  }
}
