// The commands of one connection, from frame to handler: rate limits on arrival, the turn each
// command waits for (replies come in the order commands were sent), publishes run together,
// and the closes of a connection that floods (PROTOCOL.md B4).
import { isCommandName, parseCommandFrame } from '../../protocol/commands.js';
import { MAX_REQUEST_ID_LENGTH } from '../../protocol/limits.js';
import { ProtocolError } from '../../protocol/errors.js';
import { PUBLISH_COMMAND, type Command } from '../../protocol/types.js';
import type { TokenBucket } from './rate-limiter.js';

/** Bytes of commands one connection may have waiting for their turn (PROTOCOL.md B4). */
const MAX_PENDING_COMMAND_BYTES = 4 * 1024 * 1024;
/**
 * Publishes of one connection sent to the store before the first is answered. On a shared
 * store each waits a round trip; sent together they arrive together, their replies come back
 * in one read, and their posts leave in one write per subscriber. In memory the publishes
 * read in one turn are all stored in it, so their posts too reach each subscriber in one
 * write (taken one by one, each publish after the last one's ack, the first post went out
 * alone: 0.73× the corked bare server's fan-out against 0.98×). (PROTOCOL.md B4: replies
 * still in the order the commands came).
 */
const MAX_PIPELINED_PUBLISHES = 64;

/** How a command waiting its turn arrived. */
const TEXT = 0;
const BINARY = 1;
const OVER_CONNECTION_RATE = 2;
const OVER_KEY_RATE = 3;
/** Arrived before the key was known: its share of the key's rate is taken when it runs. */
const TEXT_BEFORE_KEY = 4;
type Arrival =
  typeof TEXT | typeof BINARY | typeof OVER_CONNECTION_RATE | typeof OVER_KEY_RATE | typeof TEXT_BEFORE_KEY;

export type PublishCommand = Extract<Command, { event: typeof PUBLISH_COMMAND }>;
export type SubscribeCommand = Exclude<Command, PublishCommand>;

interface PendingCommand {
  arrival: Arrival;
  data: Buffer;
}

/**
 * The empty queue every idle connection shares (frozen: a push would throw, never leak into
 * another connection); a connection gets an array of its own when something waits.
 */
const NO_COMMANDS = Object.freeze([]) as unknown as PendingCommand[];

export interface CommandLimits {
  /** A fresh limiter per connection, or undefined when rate limiting is off. */
  createRateLimiter: (() => TokenBucket) | undefined;
  /** A fresh budget of `rate-limited` replies per connection (undefined when no rate limit is on). */
  createReplyBudget: (() => TokenBucket) | undefined;
  maxPendingCommands: number;
}

/**
 * What the queue asks of its connection, as functions every connection shares (the
 * connection is passed in): a queue carries no closures of its own. The queue keeps the
 * turn (what runs, what waits, in which order the answers go); the connection runs and
 * answers the commands.
 */
export interface CommandHost<C> {
  limits(connection: C): CommandLimits;
  /** Whether the key has been checked: commands wait for it. */
  identified(connection: C): boolean;
  closed(connection: C): boolean;
  /** The key's shared rate, once the key is known (undefined when off). */
  keyLimiter(connection: C): TokenBucket | undefined;
  /**
   * Sends a publish to the store now (every publish the same steps, so the store gets them
   * in the order they came); the function returned answers it, and is called in its turn.
   */
  publish(connection: C, command: PublishCommand): () => Promise<void>;
  /** Runs any other command; a promise while it waits for the store. */
  run(connection: C, command: SubscribeCommand): Promise<void> | undefined;
  reject(connection: C, error: ProtocolError, requestId?: string): void;
  /** Lets go of the connection's subscriptions and closes it for breaking the rules (1008). */
  close(connection: C, reason: string): void;
  log(
    connection: C,
    level: 'info' | 'warn',
    message: string,
    fields?: Record<string, string | number | boolean | undefined>,
  ): void;
  /**
   * Nothing waits or runs, and no rate bucket was made: a queue made afresh at the next frame
   * would be the same, so the connection may let this one go.
   */
  unused(connection: C, queue: CommandQueue<C>): void;
}

/**
 * Replies come in the order commands were sent. Publishes run together (up to
 * MAX_PIPELINED_PUBLISHES, answered in turn); any other command waits for what runs before
 * it, and holds the ones behind it here. Made with the first command (or the key check,
 * when the store answers later): until then a connection carries none of it, and it is let
 * go again once it holds nothing a fresh one would not (`unused`, `idle`): an idle
 * subscriber has sent a command, and need not keep a queue for it.
 */
export class CommandQueue<C> {
  // Made at the first command, not at connect: a bucket starts full, and one made at
  // connect would be full by then too, so nothing changes. For the same reason a queue
  // whose buckets are full again may be let go: the next one starts with full buckets.
  #rateLimiter: TokenBucket | undefined;
  #replyBudget: TokenBucket | undefined;
  #pending = NO_COMMANDS;
  #pendingBytes = 0;
  /** Commands started and not yet answered; the key check counts as one. */
  #inFlight: number;
  /** What runs now is publishes only, so another publish may join them. */
  #publishing = false;
  /** Settles once the last publish started has been answered: the next one answers after it. */
  #replyTurn: Promise<void> | undefined;
  /** The budget of `rate-limited` replies is spent: what waits is answered, then the connection closes. */
  #overRate = false;

  constructor(
    readonly connection: C,
    readonly host: CommandHost<C>,
    inFlight: number,
  ) {
    this.#inFlight = inFlight;
  }

  /**
   * The rate limits apply on arrival, before anything is parsed: a flood past them costs a
   * token check per frame, and at most a budget of `rate-limited` replies.
   */
  onMessage(data: Buffer, isBinary: boolean): void {
    // Once the budget of `rate-limited` replies is spent, frames are dropped unread: what
    // waits is answered, then the connection closes.
    if (this.#overRate) return;
    this.#take(data, isBinary);
    if (this.#unused) this.host.unused(this.connection, this);
  }

  #take(data: Buffer, isBinary: boolean): void {
    const { connection, host } = this;
    let arrival: Arrival = isBinary ? BINARY : host.identified(connection) ? TEXT : TEXT_BEFORE_KEY;
    const { createRateLimiter, maxPendingCommands } = host.limits(connection);
    const keyLimiter = host.keyLimiter(connection);
    if (createRateLimiter !== undefined && !(this.#rateLimiter ??= createRateLimiter()).tryTake()) {
      arrival = OVER_CONNECTION_RATE;
    } else if (keyLimiter !== undefined && !keyLimiter.tryTake()) arrival = OVER_KEY_RATE;
    if ((arrival === OVER_CONNECTION_RATE || arrival === OVER_KEY_RATE) && !this.#takeReply()) {
      this.#closeOverRate();
      return;
    }
    if (this.#pending.length === 0) {
      if (this.#inFlight === 0) {
        this.#handle(arrival, data);
        return;
      }
      if (this.#joinPublishes(arrival, data)) return;
    }
    if (this.#pending.length >= maxPendingCommands || this.#pendingBytes + data.length > MAX_PENDING_COMMAND_BYTES) {
      host.log(connection, 'warn', 'closing: too many commands waiting', {
        pending: this.#pending.length,
        bytes: this.#pendingBytes,
      });
      host.close(connection, 'too many commands waiting; wait for replies');
      return;
    }
    if (this.#pending === NO_COMMANDS) this.#pending = [];
    this.#pending.push({ arrival, data });
    this.#pendingBytes += data.length;
  }

  /**
   * Takes a token of the connection's own rate for a frame that is not a command (a tree
   * feed's `ping`): false past the rate.
   */
  withinRate(): boolean {
    const { createRateLimiter } = this.host.limits(this.connection);
    const within = createRateLimiter === undefined || (this.#rateLimiter ??= createRateLimiter()).tryTake();
    if (this.#unused) this.host.unused(this.connection, this);
    return within;
  }

  /**
   * Nothing waits or runs and no rate bucket was made: what a queue made afresh would hold.
   * Known without reading the clock, so it is asked after every frame and every answer.
   */
  get #unused(): boolean {
    return this.#settled && this.#rateLimiter === undefined && this.#replyBudget === undefined;
  }

  get #settled(): boolean {
    return this.#inFlight === 0 && this.#pending.length === 0 && !this.#overRate;
  }

  /**
   * Nothing waits or runs, and every rate bucket made is full again: a queue made afresh,
   * whose buckets start full, would behave the same from here on (a full bucket stays full
   * until a token is taken), so the connection may let this one go. Reads the clock: asked
   * once a keep-alive round, not per frame.
   */
  get idle(): boolean {
    return (
      this.#settled &&
      (this.#rateLimiter === undefined || this.#rateLimiter.full) &&
      (this.#replyBudget === undefined || this.#replyBudget.full)
    );
  }

  /** A command started outside the queue (the key check, a URL-form command) was answered. */
  done(): void {
    this.#inFlight -= 1;
    if (this.#inFlight > 0) return;
    this.#publishing = false;
    this.#replyTurn = undefined;
    const pending = this.#pending;
    while (pending.length > 0) {
      const next = pending[0]!;
      if (this.#inFlight === 0) this.#handle(next.arrival, next.data);
      else if (!this.#joinPublishes(next.arrival, next.data)) break;
      pending.shift();
      this.#pendingBytes -= next.data.length;
    }
    if (this.#overRate && this.#inFlight === 0) this.#closeOverRate();
    else if (this.#unused) this.host.unused(this.connection, this);
  }

  /** Drops what waits (the connection is closing). */
  clear(): void {
    this.#pending = NO_COMMANDS;
    this.#pendingBytes = 0;
  }

  /** Runs one command with nothing else running; the ones behind it wait in `#pending` or join it. */
  #handle(arrival: Arrival, data: Buffer): void {
    const running = this.#start(arrival, data);
    if (running === undefined) return;
    this.#inFlight += 1;
    running.then(() => this.done());
  }

  /** Starts a publish alongside the publishes running now, if that is what the frame is. */
  #joinPublishes(arrival: Arrival, data: Buffer): boolean {
    const { connection, host } = this;
    if (!this.#publishing || arrival !== TEXT || this.#inFlight >= MAX_PIPELINED_PUBLISHES || host.closed(connection)) {
      return false;
    }
    // Anything else (a subscribe, a frame that does not parse) waits its turn, and is parsed then.
    const parsed = parseCommandFrame(data.toString('utf8'));
    if (!parsed.ok || parsed.command.event !== PUBLISH_COMMAND) return false;
    this.#inFlight += 1;
    this.#startPublish(parsed.command).then(() => this.done());
    return true;
  }

  /**
   * A publish sent to the store now, answered after every command before it: at once when
   * nothing runs (the usual case), else once the publish before it has been answered.
   */
  #startPublish(command: PublishCommand): Promise<void> {
    const first = this.#inFlight === 0;
    this.#publishing = true;
    const answer = this.host.publish(this.connection, command);
    const turn = this.#replyTurn;
    const answered = first || turn === undefined ? answer() : turn.then(answer);
    this.#replyTurn = answered;
    return answered;
  }

  #start(arrival: Arrival, data: Buffer): Promise<void> | undefined {
    const { connection, host } = this;
    if (!host.identified(connection) || host.closed(connection)) return undefined;
    const keyLimiter = host.keyLimiter(connection);
    if (arrival === TEXT_BEFORE_KEY && keyLimiter !== undefined && !keyLimiter.tryTake()) {
      if (!this.#takeReply()) {
        this.#closeOverRate();
        return undefined;
      }
      arrival = OVER_KEY_RATE;
    }
    if (arrival === BINARY) {
      host.reject(
        connection,
        new ProtocolError('bad-request', 'binary frames are not accepted; send JSON text frames'),
      );
      return undefined;
    }
    if (arrival === OVER_CONNECTION_RATE || arrival === OVER_KEY_RATE) {
      const { event, requestId } = peekCommand(data);
      const why = arrival === OVER_KEY_RATE ? 'too many commands for this key' : 'too many commands on this connection';
      host.reject(connection, new ProtocolError('rate-limited', `${why}; slow down and retry`, event), requestId);
      return undefined;
    }
    const parsed = parseCommandFrame(data.toString('utf8'));
    if (!parsed.ok) {
      host.reject(connection, parsed.error, parsed.requestId);
      return undefined;
    }
    if (parsed.command.event === PUBLISH_COMMAND) return this.#startPublish(parsed.command);
    return host.run(connection, parsed.command);
  }

  /**
   * B4: the budget of `rate-limited` replies is spent, and a command dropped unanswered would
   * strand a client waiting on it. Frames from now on are not read; the commands already
   * waiting are answered, then the connection closes, so every command sent after the last
   * reply is known to have gone unanswered.
   */
  #closeOverRate(): void {
    const { connection, host } = this;
    if (host.closed(connection)) return;
    if (!this.#overRate) host.log(connection, 'warn', 'closing: rate limit exceeded and its replies spent');
    this.#overRate = true;
    if (this.#inFlight > 0 || this.#pending.length > 0) return;
    host.close(connection, 'rate limit exceeded');
  }

  /** One `rate-limited` reply from the budget (made at its first use); false once it is spent. */
  #takeReply(): boolean {
    return (this.#replyBudget ??= this.host.limits(this.connection).createReplyBudget!()).tryTake();
  }
}

/**
 * The event and requestId of a frame refused before parsing, for its `rate-limited` reply
 * (within the reply budget only, so this parse is bounded by the rate).
 */
function peekCommand(data: Buffer): { event: string | undefined; requestId: string | undefined } {
  try {
    const raw: unknown = JSON.parse(data.toString('utf8'));
    if (typeof raw !== 'object' || raw === null) return { event: undefined, requestId: undefined };
    const { event, requestId } = raw as Record<string, unknown>;
    return {
      event: typeof event === 'string' && isCommandName(event) ? event : undefined,
      requestId: typeof requestId === 'string' && requestId.length <= MAX_REQUEST_ID_LENGTH ? requestId : undefined,
    };
  } catch {
    return { event: undefined, requestId: undefined };
  }
}
