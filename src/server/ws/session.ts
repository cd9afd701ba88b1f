// ws/: WebSocket connections: one Session per connection (authentication, commands, replies,
// rate and reply budgets, the slow-consumer limit), the fan-out of posts to subscriptions, and
// the delivery gate injected faults put in front of a session.
// Over 400 lines on purpose: a Session is one state machine whose fields (the command queue,
// pipelined publishes, the write queue, the corked turn) are read on every frame; split into
// classes, each frame would cross object boundaries and every idle connection would carry
// more objects (memory per idle connection is a benchmarked figure).
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { isCommandName, parseCommandArgs, parseCommandFrame } from '../../protocol/commands.js';
import { MAX_REQUEST_ID_LENGTH } from '../../protocol/limits.js';
import {
  CLOSE_INTERNAL_ERROR,
  CLOSE_POLICY_VIOLATION,
  CLOSE_SERVICE_RESTART,
  CLOSE_SLOW_CONSUMER,
} from '../../protocol/close-codes.js';
import { ProtocolError } from '../../protocol/errors.js';
import { isoTime } from '../../protocol/dates.js';
import { encodeError, encodeEvent } from '../../protocol/events.js';
import { PUBLISH_COMMAND, type Command, type CommandName } from '../../protocol/types.js';
import type { ConnectionInfo } from '../../protocol/admin.js';
import type { AckFault, ConnectionFaults, FaultRegistry } from '../admin/faults.js';
import { QueuedPost, type FanOut, type Format, type HiddenPosts, type Subscription } from './fanout.js';
import type { Clock } from '../clock.js';
import { logs, type Logger } from '../logger.js';
import type { TokenBucket } from './rate-limiter.js';
import type { StreamPostsService } from '../service/service.js';
import {
  Refusal,
  type Admission,
  type SubscribeRequest,
  type SubscriptionHolder,
  type SubscriptionService,
} from '../service/subscriptions.js';
import { postFor } from '../service/visibility.js';
import {
  isPending,
  type Identity,
  type PostRecord,
  type PublishResult,
  type StreamRecord,
  type UserRecord,
} from '../stores/store.js';

// A slow consumer gets its close frame queued behind the data it is not
// reading; past this grace the socket is dropped so its buffers are freed.
const SLOW_CONSUMER_GRACE_MS = 1000;
const OPEN = 1;
const TEXT_FRAME = { binary: false } as const;
/**
 * What one post waiting in a history costs the server (the reference and its place in the
 * queue), counted against the slow-consumer limit: otherwise a peer that never reads and
 * subscribes again and again could queue histories without end.
 */
const QUEUED_POST_BYTES = 64;
/** Queued history is written in slices of about this many bytes, at least, each when the last has drained. */
const MIN_QUEUED_SLICE_BYTES = 64 * 1024;
/** The only frame a tree feed answers, and its answer (PROTOCOL.md B3). */
const TREE_FEED_PING = Buffer.from('ping');
const TREE_FEED_PONG = 'pong';
/** Bytes of commands one connection may have waiting for their turn (PROTOCOL.md B4). */
const MAX_PENDING_COMMAND_BYTES = 4 * 1024 * 1024;

/**
 * Frames read from one connection before it yields to the others: the kernel hands a
 * flooding peer's frames over a megabyte at a time, and without a pause here all of them
 * were handled before any other connection was served.
 */
const FRAMES_BEFORE_YIELD = 1000;
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

type PublishCommand = Extract<Command, { event: typeof PUBLISH_COMMAND }>;
type SubscribeCommand = Exclude<Command, PublishCommand>;
/** A publish the store took, and the injected fault (if any) that decides its ack. */
interface StoredPublish {
  result: PublishResult;
  injected: AckFault | undefined;
}

interface PendingCommand {
  arrival: Arrival;
  data: Buffer;
}

type Queued = QueuedPost | Buffer | string | undefined;
/**
 * The empty queues every idle connection shares (frozen: a push would throw, never leak into
 * another connection); a connection gets arrays of its own when something waits.
 */
const NO_COMMANDS = Object.freeze([]) as unknown as PendingCommand[];
const NOTHING_QUEUED = Object.freeze([]) as unknown as Queued[];
const NO_SUBSCRIPTIONS = Object.freeze([]) as unknown as Subscription[];

/** The session of a socket, for the listeners every session shares (no closures of its own). */
const SESSION = Symbol('session');
type SessionSocket = WebSocket & { [SESSION]: Session };
function sessionOf(ws: WebSocket): Session {
  return (ws as SessionSocket)[SESSION];
}

/** What a subscription is replaced by: the same format and the same streams, in any order. */
function subscriptionKey(format: Format, streams: readonly StreamRecord[]): string {
  const ids = streams.map((stream) => stream.id).sort();
  return `${format}:${ids.join(',')}`;
}

export interface SessionContext {
  /** What every connection id of this instance starts with (`w2-` under serve --workers), else ''. */
  connectionIdPrefix: string;
  service: StreamPostsService;
  subscriptions: SubscriptionService;
  fanout: FanOut;
  logger: Logger;
  /** The service's clock (admin advances included), for `connected.serverTime`. */
  clock: Clock;
  maxBufferedBytes: number;
  /** A fresh limiter per connection, or undefined when rate limiting is off. */
  createRateLimiter: (() => TokenBucket) | undefined;
  /** `connected.rateLimit` as JSON (`,"rateLimit":{…}`), or '' when rate limiting is off. */
  statedRateLimit: string;
  /**
   * A fresh budget of `rate-limited` replies per connection (undefined when no rate limit is
   * on): a flood is not answered frame for frame, and once the budget is spent the
   * connection is closed (PROTOCOL.md B4), so no command goes unanswered on an open one.
   */
  createReplyBudget: (() => TokenBucket) | undefined;
  /** How the hosted dialect (no `hello=1`) delivers hidden posts (PROTOCOL.md B1a). */
  hostedHiddenPosts: HiddenPosts;
  maxPendingCommands: number;
  faults: FaultRegistry;
  /** Called once the connection has closed, after the session let go of its subscriptions and key. */
  sessionClosed: (session: Session) => void;
}

export interface SessionStart {
  /** The connection's number: its id is `c` and this, after the instance's prefix (built when asked for, not held as a string). */
  seq: number;
  key: string | undefined;
  /** The command named in the URL form, with its query arguments. */
  urlCommand?: { event: CommandName; args: Record<string, string> };
  /**
   * The hosted tree feed address: clients there parse every message as a tree item, so
   * no envelope is sent (keep-alive is the ping alone), errors become closes, and frames
   * from the client are ignored but a text `ping`, answered `pong`.
   */
  treeOnly?: boolean;
  /**
   * `hello=1` asked for our dialect: `connected` on the URL form too, hidden posts pushed
   * while hidden. Without it the session speaks as the hosted service does (B1a).
   */
  hello?: boolean;
}

/** A close reason is at most 123 bytes. */
function closeReason(text: string): string {
  const bytes = Buffer.from(text);
  return bytes.length <= 123
    ? text
    : bytes
        .subarray(0, 120)
        .toString()
        .replace(/\uFFFD*$/, '') + '...';
}

/**
 * The `connected` frame of each user, who follows the same streams until the store is
 * reset (which makes new user records). The prefix (without its closing braces) is built
 * once, already UTF-8: a user following many streams has a prefix of kilobytes, not encoded
 * again per connection. Each connection adds only its own fields (`serverTime`, a stream
 * key's `streamId`), and the last frame is kept: connections of the same user and key kind
 * arriving within the same millisecond (a reconnecting fleet) share it. A frame is never
 * written to once built, so several sockets may send the same one.
 */
class Greeting {
  at = NaN;
  streamId: string | undefined = undefined;
  extra = '';
  frame: Buffer | undefined = undefined;

  constructor(readonly prefix: Buffer) {}

  /** `extra`: fields of our dialect, already JSON with a leading comma. */
  frameAt(serverTime: number, streamId: string | undefined, extra: string): Buffer {
    if (this.frame !== undefined && this.at === serverTime && this.streamId === streamId && this.extra === extra)
      return this.frame;
    const stream = streamId === undefined ? '' : `,"streamId":${JSON.stringify(streamId)}`;
    const tail = `,"serverTime":"${isoTime(serverTime)}"${stream}${extra}}}`;
    const prefix = this.prefix;
    const frame = Buffer.allocUnsafe(prefix.length + Buffer.byteLength(tail));
    prefix.copy(frame);
    frame.write(tail, prefix.length);
    this.at = serverTime;
    this.streamId = streamId;
    this.extra = extra;
    this.frame = frame;
    return frame;
  }
}

const greetings = new WeakMap<UserRecord, Greeting>();

/** One WebSocket connection: authentication, commands, subscriptions, backpressure. */
export class Session implements SubscriptionHolder {
  envelopeStamp = 0;
  treeStamp = 0;
  /** Cleared by each keep-alive round, set again by the pong. */
  isAlive = true;
  /** Injected faults that apply to this connection (faults.ts); undefined on almost every one. */
  faults: ConnectionFaults | undefined = undefined;
  readonly connectedAt = Date.now();
  readonly #ws: WebSocket;
  readonly #context: SessionContext;
  /** By format and stream set: subscribing again to the same streams replaces, not adds. */
  /**
   * By format and stream set (subscribing again to the same streams replaces, not adds). An
   * array made when the first subscription comes: most connections hold one, and a map each
   * would cost more than the subscription.
   */
  #subscriptions = NO_SUBSCRIPTIONS;
  // Made at the first command, not at connect: an idle connection carries neither. A bucket
  // starts full, and one made at connect would be full by then too, so nothing changes.
  #rateLimiter: TokenBucket | undefined;
  #replyBudget: TokenBucket | undefined;
  #keyLimiter: TokenBucket | undefined;
  #identity: Identity | undefined;
  #keyId: string | undefined;
  #user: UserRecord | undefined;
  // Replies come in the order commands were sent. Publishes run together (up to
  // MAX_PIPELINED_PUBLISHES, answered in turn); any other command waits for what runs before
  // it, and holds the ones behind it here.
  #pending = NO_COMMANDS;
  #pendingBytes = 0;
  /** Commands started and not yet answered; the key check counts as one. */
  #inFlight = 1;
  /** What runs now is publishes only, so another publish may join them. */
  #publishing = false;
  /** Settles once the last publish started has been answered (set by the first one). */
  #replyTurn: Promise<void> | undefined;
  #framesUntilYield = FRAMES_BEFORE_YIELD;
  #closed = false;
  /** The budget of `rate-limited` replies is spent: what waits is answered, then the connection closes. */
  #overRate = false;
  readonly #socket: Duplex;
  #corked = false;
  /**
   * Replies written in this turn, still corked: not a sign the peer stopped reading. A
   * window of pipelined publishes of large posts gets as many acks at once, each with its post.
   */
  #turnReplyBytes = 0;
  // Frames and posts waiting for the peer to read what was written before them.
  #queued = NOTHING_QUEUED;
  #queuedAt = 0;
  #queuedFrameBytes = 0;
  #queuedPosts = 0;
  #awaitingDrain = false;

  constructor(
    ws: WebSocket,
    context: SessionContext,
    readonly start: SessionStart,
    socket: Duplex,
  ) {
    this.#ws = ws;
    this.#socket = socket;
    this.#context = context;
    (ws as SessionSocket)[SESSION] = this;
    ws.on('pong', Session.#pongListener);
    ws.on('message', Session.#messageListener);
    ws.on('close', Session.#closeListener);
    ws.on('error', Session.#errorListener);
    // In memory the key is checked, the peer greeted and a URL-form subscription acknowledged
    // before this returns; a shared store's answers are awaited.
    let opening: Promise<void> | undefined;
    try {
      opening = this.#open();
    } catch (error) {
      this.#openFailed(error);
      return;
    }
    if (opening === undefined) this.#commandDone();
    else
      opening.then(
        () => this.#commandDone(),
        (error: unknown) => this.#openFailed(error),
      );
  }

  #openFailed(error: unknown): void {
    if (error instanceof ProtocolError && error.code === 'unavailable') {
      // The store is away: nothing this peer did; it reconnects (the store logged the cause once).
      this.#log('info', 'rejected connection', { code: error.code });
      if (!this.start.treeOnly) this.#sendEnvelope(encodeError(error.code, error.message));
      this.close(CLOSE_SERVICE_RESTART, closeReason(`unavailable: ${error.message}`));
      return;
    }
    this.#log('error', 'internal error', { reason: (error as Error).message });
    this.#reject(
      error instanceof ProtocolError
        ? error
        : new ProtocolError('internal', 'the server failed to open this connection'),
    );
    this.close(CLOSE_INTERNAL_ERROR, 'internal error');
  }

  // Shared by every session, found through the socket: four closures a connection fewer.
  static #pongListener(this: WebSocket): void {
    sessionOf(this).isAlive = true;
  }

  static #messageListener(this: WebSocket, data: Buffer, isBinary: boolean): void {
    sessionOf(this).#onMessage(data, isBinary);
  }

  static #closeListener(this: WebSocket, code: number): void {
    sessionOf(this).#onClose(code);
  }

  static #errorListener(this: WebSocket, error: Error): void {
    // ws reports protocol violations (e.g. a frame over maxPayload) here and closes by itself.
    sessionOf(this).#log('warn', 'connection error', { reason: error.message });
  }

  get id(): string {
    return `${this.#context.connectionIdPrefix}c${this.start.seq}`;
  }

  sendFrame(frame: Buffer | string): void {
    const ws = this.#ws;
    if (ws.readyState !== OPEN || this.faults?.silent) return;
    if (this.#queuedAt < this.#queued.length) {
      // Behind a history still being written: order holds, and what waits counts as queued.
      this.#queued.push(frame);
      this.#queuedFrameBytes += frame.length;
      if (this.#queuedBytes() > this.#context.maxBufferedBytes) this.#closeSlowConsumer();
      return;
    }
    this.#corkForThisTurn();
    ws.send(frame, TEXT_FRAME);
    if (ws.bufferedAmount - this.#turnReplyBytes > this.#context.maxBufferedBytes) this.#closeSlowConsumer();
  }

  /** The answer to one of the peer's commands: counted against the slow-consumer limit from the next turn on. */
  #sendReply(frame: Buffer | string): void {
    // Only what goes to the socket now (not behind a history, not to a closed or silenced one).
    if (this.#ws.readyState === OPEN && !this.faults?.silent && this.#queuedAt >= this.#queued.length) {
      this.#turnReplyBytes += typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
    }
    this.sendFrame(frame);
  }

  /**
   * Writes posts as the peer reads them: a slice at a time, the next once the socket has
   * drained. A history of 1,000 posts of 64 KiB is more than the slow-consumer limit, and a
   * reader taking it as fast as it can must not be mistaken for one that stopped.
   */
  sendQueued(posts: QueuedPost[]): void {
    if (this.#ws.readyState !== OPEN || this.faults?.silent) return;
    if (this.#queued === NOTHING_QUEUED) this.#queued = [];
    for (const post of posts) this.#queued.push(post);
    this.#queuedPosts += posts.length;
    if (this.#queuedBytes() > this.#context.maxBufferedBytes) this.#closeSlowConsumer();
    else this.#writeQueued();
  }

  /** What this peer has the server hold for it: written and unread, and waiting to be written. */
  #queuedBytes(): number {
    return this.#ws.bufferedAmount + this.#queuedFrameBytes + this.#queuedPosts * QUEUED_POST_BYTES;
  }

  #writeQueued(): void {
    const ws = this.#ws;
    if (ws.readyState !== OPEN || this.#closed) return;
    const queued = this.#queued;
    const slice = Math.max(this.#context.maxBufferedBytes / 2, MIN_QUEUED_SLICE_BYTES);
    while (this.#queuedAt < queued.length && ws.bufferedAmount < slice) {
      const next = queued[this.#queuedAt]!;
      queued[this.#queuedAt++] = undefined;
      let frame: Buffer | string;
      if (next instanceof QueuedPost) {
        frame = this.#context.fanout.queuedFrame(next);
        this.#queuedPosts -= 1;
      } else {
        frame = next;
        this.#queuedFrameBytes -= next.length;
      }
      this.#corkForThisTurn();
      ws.send(frame, TEXT_FRAME);
    }
    if (this.#queuedAt === queued.length) this.#clearQueued();
    else if (!this.#awaitingDrain) {
      // Past a slice the socket is over its high-water mark, so 'drain' is due.
      this.#awaitingDrain = true;
      this.#socket.once('drain', () => {
        this.#awaitingDrain = false;
        this.#writeQueued();
      });
    }
  }

  /**
   * Everything sent in this turn of the event loop goes out in one write: a history of
   * hundreds of posts, several posts published together, or a ping and its keep-alive frame
   * cost one system call, not one per frame. Uncorked before any I/O, so nothing waits.
   */
  #corkForThisTurn(): void {
    if (this.#corked) return;
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(Session.#uncork, this);
  }

  // Static, so that no session carries a closure of its own for it.
  static #uncork(session: Session): void {
    session.#corked = false;
    session.#turnReplyBytes = 0;
    session.#socket.uncork();
  }

  // Even once closed: the peer's answer to our close frame must still be read.
  static #resumeReading(session: Session): void {
    session.#ws.resume();
  }

  /** A keep-alive round's ping and event; false when none was sent (closing, or silenced by a fault). */
  ping(keepAliveFrame: Buffer): boolean {
    if (this.#ws.readyState !== OPEN || this.faults?.silent) return false;
    this.isAlive = false;
    this.#corkForThisTurn();
    this.#ws.ping();
    this.#sendEnvelope(keepAliveFrame);
    return true;
  }

  /** Whether it holds a subscription (a publish-only connection does not). */
  get subscribing(): boolean {
    return this.#subscriptions.length > 0;
  }

  /** The key's identity, once checked. */
  get identity(): Identity | undefined {
    return this.#identity;
  }

  /** Whether a ping from the peer is answered: off under a `stop-pongs` or `go-silent` fault. */
  answerPings(on: boolean): void {
    // ws answers pings itself and has no public switch per socket; its own flood guard stays in place.
    (this.#ws as unknown as { _autoPong: boolean })._autoPong = on;
  }

  /** What `GET /_admin/connections` lists about this connection. */
  info(): ConnectionInfo {
    const identity = this.#identity;
    return {
      id: this.id,
      user: identity?.userId ?? null,
      stream: identity?.streamId ?? null,
      kind: identity?.kind === 'stream' ? 'stream' : 'user',
      subscriptions: this.#subscriptions.map((subscription) => ({
        streamIds: subscription.streams.map((stream) => stream.id),
        format: subscription.format === 'tree' ? 'tree' : 'post',
      })),
      bufferedBytes: this.#ws.bufferedAmount + this.#queuedFrameBytes,
      connectedAt: new Date(this.connectedAt).toISOString(),
      remoteAddress: (this.#socket as { remoteAddress?: string }).remoteAddress ?? null,
    };
  }

  /** Calls back once the socket has closed (at once if it already has). */
  onClosed(callback: () => void): void {
    if (this.#ws.readyState === this.#ws.CLOSED) callback();
    else this.#ws.once('close', () => callback());
  }

  terminate(): void {
    this.#ws.terminate();
  }

  close(code: number, reason: string): void {
    this.#ws.close(code, reason);
  }

  /** Checks the key, then greets; a promise only while a shared store is asked. */
  #open(): Promise<void> | undefined {
    const admitted = this.#context.subscriptions.admit(this.start.key, this);
    return isPending(admitted) ? admitted.then((found) => this.#opened(found)) : this.#opened(admitted);
  }

  #opened(admitted: Admission | Refusal | undefined): Promise<void> | undefined {
    // Not kept for the life of the connection: it was needed only here.
    this.start.key = undefined;
    if (admitted === undefined) return undefined;
    if (admitted instanceof Refusal) {
      this.#log('warn', 'rejected connection', { code: admitted.code });
      // On the tree feed the close reason alone says it: its readers take every message for a tree item.
      this.#sendEnvelope(encodeError(admitted.code, admitted.message));
      this.close(admitted.closeCode, this.start.treeOnly ? closeReason(admitted.message) : admitted.closeReason);
      return undefined;
    }
    const { identity, user } = admitted;
    this.#keyId = admitted.keyId;
    this.#keyLimiter = admitted.keyBucket;
    this.#identity = identity;
    this.#user = user;
    this.#context.faults.attach(this);
    // Every connection passes here: no fields are built for a line that is not written.
    if (logs(this.#context.logger, 'info'))
      this.#log('info', 'connected', { user: user.id, keyKind: identity.kind, stream: identity.streamId });
    const urlCommand = this.start.urlCommand;
    // The hosted dialect greets on the bare endpoint only: bots on the URL form take any
    // message but `sub_ack`, `ack`, `keep-alive` and posts for news.
    if (urlCommand === undefined || this.start.hello) this.#greet(user, identity);
    if (urlCommand) return this.#run(() => parseCommandArgs(urlCommand.event, urlCommand.args), urlCommand.event);
    return undefined;
  }

  /** Sends `connected`. */
  #greet(user: UserRecord, identity: Identity): void {
    let greeting = greetings.get(user);
    if (greeting === undefined) {
      const whole = encodeEvent('connected', {
        message: 'connected',
        userId: user.id,
        streams: this.#context.service.streamsOf(user).map((stream) => stream.id),
      });
      greeting = new Greeting(Buffer.from(whole.slice(0, -2)));
      greetings.set(user, greeting);
    }
    // The hosted dialect gets no field the hosted service is not known to send.
    const extra = this.start.hello ? this.#context.statedRateLimit : '';
    this.#sendEnvelope(greeting.frameAt(this.#context.clock.now(), identity.streamId, extra));
  }

  /**
   * The rate limits apply on arrival, before anything is parsed: a flood past them costs a
   * token check per frame, and at most a budget of `rate-limited` replies.
   */
  #onMessage(data: Buffer, isBinary: boolean): void {
    if (this.#closed || this.#overRate) return;
    if (--this.#framesUntilYield === 0) {
      this.#framesUntilYield = FRAMES_BEFORE_YIELD;
      this.#ws.pause();
      setImmediate(Session.#resumeReading, this);
    }
    if (this.start.treeOnly) {
      this.#onTreeFeedFrame(data, isBinary);
      return;
    }
    let arrival: Arrival = isBinary ? BINARY : this.#identity === undefined ? TEXT_BEFORE_KEY : TEXT;
    const { createRateLimiter } = this.#context;
    if (createRateLimiter !== undefined && !(this.#rateLimiter ??= createRateLimiter()).tryTake()) {
      arrival = OVER_CONNECTION_RATE;
    } else if (this.#keyLimiter !== undefined && !this.#keyLimiter.tryTake()) arrival = OVER_KEY_RATE;
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
    if (
      this.#pending.length >= this.#context.maxPendingCommands ||
      this.#pendingBytes + data.length > MAX_PENDING_COMMAND_BYTES
    ) {
      this.#log('warn', 'closing: too many commands waiting', {
        pending: this.#pending.length,
        bytes: this.#pendingBytes,
      });
      this.#detach();
      this.#ws.close(CLOSE_POLICY_VIOLATION, 'too many commands waiting; wait for replies');
      return;
    }
    if (this.#pending === NO_COMMANDS) this.#pending = [];
    this.#pending.push({ arrival, data });
    this.#pendingBytes += data.length;
  }

  /**
   * A tree feed reads no commands (PROTOCOL.md B3): its news terminals send `login KEY` and
   * JSON frames, which are dropped, and a text `ping` they expect a `pong` for within 2 s,
   * or they reconnect. Past the connection's rate a ping goes unanswered rather than
   * closing the feed: the terminal reconnects, which is its own rule.
   */
  #onTreeFeedFrame(data: Buffer, isBinary: boolean): void {
    // A `stop-pongs` fault stops these too: the way to see such a terminal reconnect.
    if (isBinary || !data.equals(TREE_FEED_PING) || this.faults?.noPongs) return;
    const { createRateLimiter } = this.#context;
    if (createRateLimiter !== undefined && !(this.#rateLimiter ??= createRateLimiter()).tryTake()) return;
    this.#sendReply(TREE_FEED_PONG);
  }

  /** Runs one command with nothing else running; the ones behind it wait in `#pending` or join it. */
  #handle(arrival: Arrival, data: Buffer): void {
    const running = this.#start(arrival, data);
    if (running === undefined) return;
    this.#inFlight += 1;
    running.then(() => this.#commandDone());
  }

  /** Starts a publish alongside the publishes running now, if that is what the frame is. */
  #joinPublishes(arrival: Arrival, data: Buffer): boolean {
    if (!this.#publishing || arrival !== TEXT || this.#inFlight >= MAX_PIPELINED_PUBLISHES || this.#closed) {
      return false;
    }
    // Anything else (a subscribe, a frame that does not parse) waits its turn, and is parsed then.
    const parsed = parseCommandFrame(data.toString('utf8'));
    if (!parsed.ok || parsed.command.event !== PUBLISH_COMMAND) return false;
    this.#inFlight += 1;
    this.#startPublish(parsed.command).then(() => this.#commandDone());
    return true;
  }

  #commandDone(): void {
    this.#inFlight -= 1;
    if (this.#inFlight > 0) return;
    this.#publishing = false;
    const pending = this.#pending;
    while (pending.length > 0) {
      const next = pending[0]!;
      if (this.#inFlight === 0) this.#handle(next.arrival, next.data);
      else if (!this.#joinPublishes(next.arrival, next.data)) break;
      pending.shift();
      this.#pendingBytes -= next.data.length;
    }
    if (this.#overRate && this.#inFlight === 0) this.#closeOverRate();
  }

  #start(arrival: Arrival, data: Buffer): Promise<void> | undefined {
    if (this.#identity === undefined || this.#closed) return undefined;
    if (arrival === TEXT_BEFORE_KEY && this.#keyLimiter !== undefined && !this.#keyLimiter.tryTake()) {
      if (!this.#takeReply()) {
        this.#closeOverRate();
        return undefined;
      }
      arrival = OVER_KEY_RATE;
    }
    if (arrival === BINARY) {
      this.#reject(new ProtocolError('bad-request', 'binary frames are not accepted; send JSON text frames'));
      return undefined;
    }
    if (arrival === OVER_CONNECTION_RATE || arrival === OVER_KEY_RATE) {
      const { event, requestId } = peekCommand(data);
      const why = arrival === OVER_KEY_RATE ? 'too many commands for this key' : 'too many commands on this connection';
      this.#reject(new ProtocolError('rate-limited', `${why}; slow down and retry`, event), requestId);
      return undefined;
    }
    const parsed = parseCommandFrame(data.toString('utf8'));
    if (!parsed.ok) {
      this.#reject(parsed.error, parsed.requestId);
      return undefined;
    }
    if (parsed.command.event === PUBLISH_COMMAND) return this.#startPublish(parsed.command);
    return this.#run(() => parsed.command, parsed.command.event);
  }

  /** Runs a command; a promise while it waits for the store (a publish, or a shared store's reads). */
  #run(parse: () => Command, event: CommandName): Promise<void> | undefined {
    let requestId: string | undefined;
    try {
      const command = parse();
      requestId = command.requestId;
      const running =
        command.event === PUBLISH_COMMAND
          ? this.#answerPublish(command, this.#storePublish(command))
          : this.#subscribe(command);
      return running?.catch((error: unknown) => this.#failed(error, requestId, event));
    } catch (error) {
      this.#failed(error, requestId, event);
      return undefined;
    }
  }

  #failed(error: unknown, requestId: string | undefined, event: CommandName): void {
    if (error instanceof ProtocolError) {
      this.#reject(error, requestId, event);
      return;
    }
    this.#log('error', 'internal error', { event, reason: (error as Error).message });
    this.#reject(new ProtocolError('internal', 'the server failed to run this command', event), requestId);
  }

  #subscribe(command: SubscribeCommand): Promise<void> | undefined {
    return this.#context.subscriptions.subscribe(this, {
      identity: this.#identity!,
      args: command.data,
      command: command.event,
      requestId: command.requestId,
      format: command.event === 'on-stream-post-tree' ? 'tree' : 'envelope',
      hiddenPosts: this.start.hello ? 'push' : this.#context.hostedHiddenPosts,
    });
  }

  /** Closed (or closing): a subscribe still under way registers nothing. */
  get closed(): boolean {
    return this.#closed;
  }

  get subscriptionCount(): number {
    return this.#subscriptions.length;
  }

  /** Subscribing again to the same streams in the same format replaces, not adds. */
  repeatOf(format: Format, streams: readonly StreamRecord[]): Subscription | undefined {
    // Nearly every connection subscribes once: no key is built when there is nothing to replace.
    if (this.#subscriptions.length === 0) return undefined;
    const key = subscriptionKey(format, streams);
    return this.#subscriptions.find(
      (held) =>
        held.format === format &&
        held.streams.length === streams.length &&
        subscriptionKey(format, held.streams) === key,
    );
  }

  hold(subscription: Subscription, replaced: Subscription | undefined): void {
    const subscriptions = this.#subscriptions;
    if (replaced) subscriptions[subscriptions.indexOf(replaced)] = subscription;
    else if (subscriptions === NO_SUBSCRIPTIONS) this.#subscriptions = [subscription];
    else subscriptions.push(subscription);
  }

  /** `sub_ack` with how many history messages follow (the history and live posts come after it). */
  acknowledge(request: SubscribeRequest, subscription: Subscription, history: readonly PostRecord[]): void {
    const streamIds = subscription.streams.map((stream) => stream.id);
    const { command, requestId } = request;
    this.#sendEnvelope(
      encodeEvent(
        'sub_ack',
        { command, streamIds, lastPosts: request.args.lastPosts, history: history.length },
        requestId,
      ),
    );
    if (logs(this.#context.logger, 'info'))
      this.#log('info', 'subscribed', {
        event: command,
        requestId,
        streams: streamIds.join(','),
        history: history.length,
      });
  }

  /**
   * A publish sent to the store now, answered after every command before it. Every publish
   * takes the same steps to the store, so the store gets them in the order they came.
   */
  #startPublish(command: PublishCommand): Promise<void> {
    // Nothing before it waits for its answer (the usual case): no turn to wait for.
    const first = this.#inFlight === 0;
    this.#publishing = true;
    const stored = this.#storePublish(command);
    const answer = () =>
      this.#answerPublish(command, stored).catch((error: unknown) =>
        this.#failed(error, command.requestId, PUBLISH_COMMAND),
      );
    const answered = first || this.#replyTurn === undefined ? answer() : this.#replyTurn.then(answer);
    this.#replyTurn = answered;
    return answered;
  }

  #storePublish(command: PublishCommand): Promise<StoredPublish> {
    const { faults, service } = this.#context;
    let stored: Promise<StoredPublish>;
    try {
      const injected = faults.onPublish(this.#identity!, command.data.streamId, this.id);
      stored = service.publish(this.#identity!, command.data).then((result) => ({ result, injected }));
    } catch (error) {
      stored = Promise.reject(error as Error);
    }
    // Answered in its turn (#answerPublish); a refusal is not an unhandled rejection meanwhile.
    stored.catch(() => {});
    return stored;
  }

  async #answerPublish(command: PublishCommand, stored: Promise<StoredPublish>): Promise<void> {
    const { faults } = this.#context;
    const { result, injected } = await stored;
    if (injected !== undefined && faults.dropsAck(injected)) {
      this.#log('warn', 'ack dropped by an injected fault', { post: result.post.id });
      return;
    }
    this.#sendReply(
      encodeEvent('ack', { post: postFor(result.post, 'owner'), duplicate: result.duplicate }, command.requestId),
    );
    if (logs(this.#context.logger, 'info'))
      this.#log('info', 'published', {
        event: command.event,
        requestId: command.requestId,
        stream: result.post.streamId,
        post: result.post.id,
        duplicate: result.duplicate,
        hidden: result.post.hidden,
      });
  }

  #reject(error: ProtocolError, requestId?: string, event?: string): void {
    if (this.start.treeOnly)
      this.close(error.code === 'internal' ? CLOSE_INTERNAL_ERROR : CLOSE_POLICY_VIOLATION, closeReason(error.message));
    else this.#sendReply(encodeError(error.code, error.message, error.command ?? event, requestId));
    // The client's mistake, answered to it: not a warning for the operator (a flood of bad
    // frames would otherwise fill a `serve -q` log).
    this.#log('info', 'command failed', {
      event: error.command ?? event,
      requestId,
      code: error.code,
      reason: error.message,
    });
  }

  /** A frame other than a post: never sent on the tree feed address. */
  #sendEnvelope(frame: Buffer | string): void {
    if (!this.start.treeOnly) this.sendFrame(frame);
  }

  /**
   * B4: the budget of `rate-limited` replies is spent, and a command dropped unanswered would
   * strand a client waiting on it. Frames from now on are not read; the commands already
   * waiting are answered, then the connection closes, so every command sent after the last
   * reply is known to have gone unanswered.
   */
  #closeOverRate(): void {
    if (this.#closed) return;
    if (!this.#overRate) this.#log('warn', 'closing: rate limit exceeded and its replies spent');
    this.#overRate = true;
    if (this.#inFlight > 0 || this.#pending.length > 0) return;
    this.#detach();
    this.#ws.close(CLOSE_POLICY_VIOLATION, 'rate limit exceeded');
  }

  #closeSlowConsumer(): void {
    if (this.#closed) return;
    this.#log('warn', 'closing slow consumer', { bufferedBytes: this.#ws.bufferedAmount });
    this.#detach();
    this.#ws.close(CLOSE_SLOW_CONSUMER, 'slow consumer');
    setTimeout(() => this.#ws.terminate(), SLOW_CONSUMER_GRACE_MS).unref();
  }

  #detach(): void {
    this.#closed = true;
    for (const subscription of this.#subscriptions) this.#context.fanout.remove(subscription);
    this.#subscriptions = NO_SUBSCRIPTIONS;
    this.#pending = NO_COMMANDS;
    this.#pendingBytes = 0;
    this.#clearQueued();
  }

  #clearQueued(): void {
    this.#queued = NOTHING_QUEUED;
    this.#queuedAt = 0;
    this.#queuedFrameBytes = 0;
    this.#queuedPosts = 0;
  }

  #onClose(code: number): void {
    this.#detach();
    this.faults?.gate?.stop();
    // Only now: a connection closed for being slow holds its buffers until its socket is gone.
    if (this.#keyId !== undefined) this.#context.subscriptions.leave(this.#keyId);
    this.#keyId = undefined;
    if (logs(this.#context.logger, 'info')) this.#log('info', 'disconnected', { code });
    this.#context.sessionClosed(this);
  }

  /** One `rate-limited` reply from the budget (made at its first use); false once it is spent. */
  #takeReply(): boolean {
    return (this.#replyBudget ??= this.#context.createReplyBudget!()).tryTake();
  }

  #log(
    level: 'info' | 'warn' | 'error',
    message: string,
    fields: Record<string, string | number | boolean | undefined> = {},
  ): void {
    const { logger } = this.#context;
    if (logs(logger, level)) logger.log(level, message, { conn: this.id, user: this.#user?.id, ...fields });
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
