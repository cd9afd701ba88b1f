import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { parseCommandArgs, parseCommandFrame } from '../protocol/commands.js';
import { ProtocolError, UNAUTHORIZED_MESSAGE } from '../protocol/errors.js';
import { encodeError, encodeEvent } from '../protocol/events.js';
import { PUBLISH_COMMAND, type Command, type CommandName } from '../protocol/types.js';
import { FanOut, Subscription, type Format, type Subscriber } from './fanout.js';
import type { Logger } from './logger.js';
import type { TokenBucket } from './rate-limiter.js';
import type { StreamPostsService } from './service.js';
import { toWirePost, type Identity, type UserRecord } from './store.js';

export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_INTERNAL_ERROR = 1011;
export const CLOSE_SLOW_CONSUMER = 1013;
export const CLOSE_UNAUTHORIZED = 4401;

// A slow consumer gets its close frame queued behind the data it is not
// reading; past this grace the socket is dropped so its buffers are freed.
const SLOW_CONSUMER_GRACE_MS = 1000;
const OPEN = 1;
const TEXT_FRAME = { binary: false } as const;

export interface SessionContext {
  service: StreamPostsService;
  fanout: FanOut;
  logger: Logger;
  maxBufferedBytes: number;
  /** A fresh limiter per connection, or undefined when rate limiting is off. */
  createRateLimiter: (() => TokenBucket) | undefined;
}

export interface SessionStart {
  id: string;
  key: string | undefined;
  /** The command named in the URL form, with its query arguments. */
  urlCommand?: { event: CommandName; args: Record<string, string> };
}

/**
 * The `connected` frame of each user, who follows the same streams until the store is
 * reset (which makes new user records): built once, not on every connection.
 */
const connectedFrames = new WeakMap<UserRecord, Buffer>();

/** One WebSocket connection: authentication, commands, subscriptions, backpressure. */
export class Session implements Subscriber {
  envelopeStamp = 0;
  treeStamp = 0;
  /** Cleared by each keep-alive round, set again by the pong. */
  isAlive = true;
  readonly #ws: WebSocket;
  readonly #context: SessionContext;
  readonly #subscriptions = new Set<Subscription>();
  readonly #rateLimiter: TokenBucket | undefined;
  #identity: Identity | undefined;
  #user: UserRecord | undefined;
  // Commands run one after another so replies come in the order commands were sent.
  #queue: Promise<void>;
  #closed = false;
  readonly #socket: Duplex;
  #corked = false;

  constructor(
    ws: WebSocket,
    context: SessionContext,
    readonly start: SessionStart,
    socket: Duplex,
  ) {
    this.#ws = ws;
    this.#socket = socket;
    this.#context = context;
    this.#rateLimiter = context.createRateLimiter?.();
    ws.on('pong', () => {
      this.isAlive = true;
    });
    ws.on('message', (data, isBinary) => this.#onMessage(data as Buffer, isBinary));
    ws.on('close', (code) => this.#onClose(code));
    ws.on('error', (error) => {
      // ws reports protocol violations (e.g. a frame over maxPayload) here and closes by itself.
      this.#log('warn', 'connection error', { reason: error.message });
    });
    this.#queue = this.#authenticate().catch((error: unknown) => {
      this.#log('error', 'internal error', { reason: (error as Error).message });
      this.#reject(new ProtocolError('internal', 'the server failed to open this connection'));
      this.close(CLOSE_INTERNAL_ERROR, 'internal error');
    });
  }

  get id(): string {
    return this.start.id;
  }

  sendFrame(frame: Buffer | string): void {
    const ws = this.#ws;
    if (ws.readyState !== OPEN) return;
    this.#corkForThisTurn();
    ws.send(frame, TEXT_FRAME);
    if (ws.bufferedAmount > this.#context.maxBufferedBytes) this.#closeSlowConsumer();
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
    session.#socket.uncork();
  }

  ping(keepAliveFrame: Buffer): void {
    if (this.#ws.readyState !== OPEN) return;
    this.isAlive = false;
    this.#corkForThisTurn();
    this.#ws.ping();
    this.sendFrame(keepAliveFrame);
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

  async #authenticate(): Promise<void> {
    const identity = await this.#context.service.authenticate(this.start.key);
    if (!identity) {
      this.#log('warn', 'rejected connection', { code: 'unauthorized' });
      this.sendFrame(encodeError('unauthorized', UNAUTHORIZED_MESSAGE));
      this.close(CLOSE_UNAUTHORIZED, 'unauthorized');
      return;
    }
    const user = await this.#context.service.userOf(identity);
    this.#identity = identity;
    this.#user = user;
    this.#log('info', 'connected', { user: user.id, keyKind: identity.kind, stream: identity.streamId });
    let connected = connectedFrames.get(user);
    if (!connected) {
      const streams = await this.#context.service.store.streamsOf(user.id);
      connected = Buffer.from(
        encodeEvent('connected', { message: 'connected', userId: user.id, streams: streams.map((stream) => stream.id) }),
      );
      connectedFrames.set(user, connected);
    }
    this.sendFrame(connected);
    const urlCommand = this.start.urlCommand;
    if (urlCommand) await this.#run(() => parseCommandArgs(urlCommand.event, urlCommand.args), urlCommand.event);
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    // The token is taken on arrival; the reply waits its turn so replies stay in command order.
    const limited = this.#rateLimiter !== undefined && !this.#rateLimiter.tryTake();
    this.#queue = this.#queue.then(() => {
      if (this.#identity === undefined || this.#closed) return;
      if (isBinary) {
        this.#reject(new ProtocolError('bad-request', 'binary frames are not accepted; send JSON text frames'));
        return;
      }
      const parsed = parseCommandFrame(data.toString('utf8'));
      if (limited) {
        const event = parsed.ok ? parsed.command.event : undefined;
        const requestId = parsed.ok ? parsed.command.requestId : parsed.requestId;
        this.#reject(
          new ProtocolError('rate-limited', 'too many commands on this connection; slow down and retry', event),
          requestId,
        );
        return;
      }
      if (!parsed.ok) {
        this.#reject(parsed.error, parsed.requestId);
        return;
      }
      return this.#run(() => parsed.command, parsed.command.event);
    });
  }

  async #run(parse: () => Command, event: CommandName): Promise<void> {
    let requestId: string | undefined;
    try {
      const command = parse();
      requestId = command.requestId;
      if (command.event === PUBLISH_COMMAND) await this.#publish(command);
      else await this.#subscribe(command);
    } catch (error) {
      if (error instanceof ProtocolError) {
        this.#reject(error, requestId, event);
        return;
      }
      this.#log('error', 'internal error', { event, reason: (error as Error).message });
      this.#reject(new ProtocolError('internal', 'the server failed to run this command', event), requestId);
    }
  }

  async #subscribe(command: Extract<Command, { event: 'on-stream-post' | 'on-stream-post-tree' }>): Promise<void> {
    const { service, fanout } = this.#context;
    const resolved = await service.resolveStreams(this.#identity!, command.data.streamIds, command.event);
    if (this.#closed) return;
    const format: Format = command.event === 'on-stream-post-tree' ? 'tree' : 'envelope';
    const subscription = new Subscription(this, format, resolved.user, resolved.streams);
    // Registered before history is read, so nothing published meanwhile is missed.
    fanout.add(subscription);
    this.#subscriptions.add(subscription);
    const streamIds = resolved.streams.map((stream) => stream.id);
    this.sendFrame(
      encodeEvent('sub_ack', { command: command.event, streamIds, lastPosts: command.data.lastPosts }, command.requestId),
    );
    const history = await service.history(resolved, command.data.lastPosts);
    fanout.goLive(subscription, history);
    this.#log('info', 'subscribed', {
      event: command.event,
      requestId: command.requestId,
      streams: streamIds.join(','),
      history: history.length,
    });
  }

  async #publish(command: Extract<Command, { event: 'add-stream-post' }>): Promise<void> {
    const result = await this.#context.service.publish(this.#identity!, command.data);
    this.sendFrame(
      encodeEvent('ack', { post: toWirePost(result.post, true), duplicate: result.duplicate }, command.requestId),
    );
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
    this.sendFrame(encodeError(error.code, error.message, error.command ?? event, requestId));
    this.#log('warn', 'command failed', { event: error.command ?? event, requestId, code: error.code, reason: error.message });
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
    this.#subscriptions.clear();
  }

  #onClose(code: number): void {
    this.#detach();
    this.#log('info', 'disconnected', { code });
  }

  #log(level: 'info' | 'warn' | 'error', message: string, fields: Record<string, string | number | boolean | undefined> = {}): void {
    this.#context.logger.log(level, message, { conn: this.id, user: this.#user?.id, ...fields });
  }
}
