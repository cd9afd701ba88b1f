// ws/: WebSocket connections: one Session per connection (authentication, the protocol's
// commands, subscriptions) on its socket end (connection.ts: reads, writes, closes), with its
// command queue and rate limits (command-queue.ts); the fan-out of posts to subscriptions.
// Injected faults wrap a session's outlet from outside (outlet.ts): nothing here asks
// whether one is set.
import type { Duplex } from 'node:stream';
import { parseCommandArgs } from '../../protocol/commands.js';
import { CLOSE_INTERNAL_ERROR, CLOSE_POLICY_VIOLATION, CLOSE_SERVICE_RESTART } from '../../protocol/close-codes.js';
import { ProtocolError } from '../../protocol/errors.js';
import { encodeError, encodeEvent } from '../../protocol/events.js';
import { PUBLISH_COMMAND, type Command, type CommandName } from '../../protocol/types.js';
import type { ConnectionInfo } from '../../protocol/admin.js';
import type { AckFault } from '../fault-hooks.js';
import { CommandQueue, type CommandHost, type PublishCommand, type SubscribeCommand } from './command-queue.js';
import { closeReason, Connection, type ConnectionSocket } from './connection.js';
import type { Format, Holder, Subscription } from './fanout.js';
import { Greeting, greetings } from './greeting.js';
import type { HookedConnection } from './outlet.js';
import type { SessionContextOf, SessionStart } from './session-context.js';
import { logs } from '../logger.js';
import type { TokenBucket } from './rate-limiter.js';
import { Refusal, type Admission, type SubscribeRequest } from '../service/subscriptions.js';
import { postFor } from '../service/visibility.js';
import {
  isPending,
  type Identity,
  type PostRecord,
  type PublishResult,
  type StreamRecord,
  type UserRecord,
} from '../stores/store.js';

/** A publish the store took, and the injected fault (if any) that decides its ack. */
interface StoredPublish {
  result: PublishResult;
  injected: AckFault | undefined;
}

/** The only frame a tree feed answers, and its answer (PROTOCOL.md B3). */
const TREE_FEED_PING = Buffer.from('ping');
const TREE_FEED_PONG = 'pong';

/** The empty list of a connection without a subscription, for the paths that read a list. */
const NO_SUBSCRIPTIONS: readonly Subscription[] = Object.freeze([]);

/** What a subscription is replaced by: the same format and the same streams, in any order. */
function subscriptionKey(format: Format, streams: readonly StreamRecord[]): string {
  const ids = streams.map((stream) => stream.id).sort();
  return `${format}:${ids.join(',')}`;
}

export type SessionContext = SessionContextOf<Session>;
export type { SessionStart };

/** One WebSocket connection: authentication, commands, subscriptions, backpressure. */
export class Session extends Connection<SessionContext> implements Holder, HookedConnection {
  envelopeStamp = 0;
  treeStamp = 0;
  /**
   * By format and stream set (subscribing again to the same streams replaces, not adds). Most
   * connections hold one, held as it is; an array once there are more (a map each would cost
   * more than the subscription, and an array of one 56 bytes).
   */
  #subscriptions: Subscription | Subscription[] | undefined;
  #keyLimiter: TokenBucket | undefined;
  #identity: Identity | undefined;
  #keyId: string | undefined;
  #user: UserRecord | undefined;
  /**
   * Made with the first command, or for a key check the store answers later; let go once a
   * fresh one would be the same (at once when no rate bucket was made, else at a keep-alive
   * round once the buckets are full again).
   */
  #commands: CommandQueue<Session> | undefined;
  #closed = false;
  // What is kept of the start: its key and URL-form command are needed only to open.
  readonly #seq: number;
  /** The hosted tree feed address (SessionStart.treeOnly). */
  readonly #treeOnly: boolean;
  /** `hello=1` asked for our dialect (SessionStart.hello). */
  readonly #hello: boolean;

  constructor(ws: ConnectionSocket, context: SessionContext, start: SessionStart, socket: Duplex) {
    super(ws, socket, context);
    this.#seq = start.seq;
    this.#treeOnly = start.treeOnly === true;
    this.#hello = start.hello === true;
    // In memory the key is checked, the peer greeted and a URL-form subscription acknowledged
    // before this returns; a shared store's answers are awaited, and commands sent meanwhile
    // wait behind the key check (it counts as a command in flight: for good, if it failed).
    let opening: Promise<void> | undefined;
    try {
      opening = this.#open(start.key, start.urlCommand);
    } catch (error) {
      this.#commands = new CommandQueue(this, Session.#commandHost, 1);
      this.#openFailed(error);
      return;
    }
    if (opening === undefined) return;
    const commands = (this.#commands = new CommandQueue(this, Session.#commandHost, 1));
    opening.then(
      () => commands.done(),
      (error: unknown) => this.#openFailed(error),
    );
  }

  get #context(): SessionContext {
    return this.context;
  }

  #openFailed(error: unknown): void {
    if (error instanceof ProtocolError && error.code === 'unavailable') {
      // The store is away: nothing this peer did; it reconnects (the store logged the cause once).
      this.#log('info', 'rejected connection', { code: error.code });
      if (!this.#treeOnly) this.#sendEnvelope(encodeError(error.code, error.message));
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

  protected onError(error: Error): void {
    this.#log('warn', 'connection error', { reason: error.message });
  }

  get id(): string {
    return `${this.#context.connectionIdPrefix}c${this.#seq}`;
  }

  /** The answer to one of the peer's commands: counted against the slow-consumer limit from the next turn on. */
  #sendReply(frame: Buffer | string): void {
    this.outlet.writeReply(frame);
  }

  /** A keep-alive round's ping and event; false when none was sent (closing, or silenced by a fault). */
  ping(keepAliveFrame: Buffer): boolean {
    // Rounds come every so often to every connection: the time to let go of a queue whose
    // rate buckets were used, once they are full again (an idle subscriber's, mostly).
    if (this.#commands?.idle) this.#commands = undefined;
    if (!this.outlet.writePing()) return false;
    this.isAlive = false;
    this.#sendEnvelope(keepAliveFrame);
    return true;
  }

  /** Whether it holds a subscription (a publish-only connection does not). */
  get subscribing(): boolean {
    return this.#subscriptions !== undefined;
  }

  /** The key's identity, once checked. */
  get identity(): Identity | undefined {
    return this.#identity;
  }

  /** What `GET /_admin/connections` lists about this connection. */
  info(): ConnectionInfo {
    const identity = this.#identity;
    return {
      id: this.id,
      user: identity?.userId ?? null,
      stream: identity?.streamId ?? null,
      kind: identity?.kind === 'stream' ? 'stream' : 'user',
      subscriptions: this.#held.map((subscription) => ({
        streamIds: subscription.streams.map((stream) => stream.id),
        format: subscription.format === 'tree' ? 'tree' : 'post',
      })),
      bufferedBytes: this.bufferedBytes,
      connectedAt: new Date(this.connectedAt).toISOString(),
      remoteAddress: (this.socket as { remoteAddress?: string }).remoteAddress ?? null,
    };
  }

  /** Checks the key, then greets; a promise only while a shared store is asked. */
  #open(key: string | undefined, urlCommand: SessionStart['urlCommand']): Promise<void> | undefined {
    const admitted = this.#context.subscriptions.admit(key, this);
    return isPending(admitted)
      ? admitted.then((found) => this.#opened(found, urlCommand))
      : this.#opened(admitted, urlCommand);
  }

  #opened(
    admitted: Admission | Refusal | undefined,
    urlCommand: SessionStart['urlCommand'],
  ): Promise<void> | undefined {
    if (admitted === undefined) return undefined;
    if (admitted instanceof Refusal) {
      this.#log('warn', 'rejected connection', { code: admitted.code });
      // On the tree feed the close reason alone says it: its readers take every message for a tree item.
      this.#sendEnvelope(encodeError(admitted.code, admitted.message));
      this.close(admitted.closeCode, this.#treeOnly ? closeReason(admitted.message) : admitted.closeReason);
      return undefined;
    }
    const { identity, user } = admitted;
    this.#keyId = admitted.keyId;
    this.#keyLimiter = this.#context.keyLimits.bucket(admitted.keyId);
    this.#identity = identity;
    this.#user = user;
    this.#context.faults.attach(this);
    // Every connection passes here: no fields are built for a line that is not written.
    if (logs(this.#context.logger, 'info'))
      this.#log('info', 'connected', { user: user.id, keyKind: identity.kind, stream: identity.streamId });
    // The hosted dialect greets on the bare endpoint only: bots on the URL form take any
    // message but `sub_ack`, `ack`, `keep-alive` and posts for news.
    if (urlCommand === undefined || this.#hello) this.#greet(user, identity);
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
    const extra = this.#hello ? this.#context.statedRateLimit : '';
    this.#sendEnvelope(greeting.frameAt(this.#context.clock.now(), identity.streamId, extra));
  }

  /**
   * Frames go to the command queue (made at the first one), which keeps their turn and hands
   * each command back here to run.
   */
  protected onMessage(data: Buffer, isBinary: boolean): void {
    // Every frame ws has read is counted, dropped ones too (closing, or past the rate): every
    // so many, reading yields to the other connections. A flood goes on arriving after its
    // connection was closed for it, and was read in one go: a fresh client waited for all of it.
    this.frameRead();
    if (this.#closed) return;
    if (this.#treeOnly) this.#treeFeedFrame(data, isBinary);
    else (this.#commands ??= new CommandQueue(this, Session.#commandHost, 0)).onMessage(data, isBinary);
  }

  /**
   * A tree feed reads no commands (PROTOCOL.md B3): its news terminals send `login KEY` and
   * JSON frames, which are dropped, and a text `ping` they expect a `pong` for within 2 s,
   * or they reconnect. Past the connection's rate a ping goes unanswered rather than
   * closing the feed: the terminal reconnects, which is its own rule.
   */
  #treeFeedFrame(data: Buffer, isBinary: boolean): void {
    // A `stop-pongs` fault stops these too: the way to see such a terminal reconnect.
    if (isBinary || !data.equals(TREE_FEED_PING) || !this.answersPings) return;
    const commands = (this.#commands ??= new CommandQueue(this, Session.#commandHost, 0));
    if (commands.withinRate()) this.#sendReply(TREE_FEED_PONG);
  }

  /** What the command queue asks of a session: one object for every session, not closures of each. */
  static readonly #commandHost: CommandHost<Session> = {
    limits: (session) => session.#context,
    identified: (session) => session.#identity !== undefined,
    closed: (session) => session.#closed,
    keyLimiter: (session) => session.#keyLimiter,
    publish: (session, command) => session.#publish(command),
    run: (session, command) => session.#run(() => command, command.event),
    reject: (session, error, requestId) => session.#reject(error, requestId),
    close: (session, reason) => {
      session.#detach();
      session.ws.close(CLOSE_POLICY_VIOLATION, reason);
    },
    log: (session, level, message, fields) => session.#log(level, message, fields),
    unused: (session, queue) => {
      if (session.#commands === queue) session.#commands = undefined;
    },
  };

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
      hiddenPosts: this.#hello ? 'push' : this.#context.hostedHiddenPosts,
    });
  }

  /** Closed (or closing): a subscribe still under way registers nothing. */
  get closed(): boolean {
    return this.#closed;
  }

  get subscriptionCount(): number {
    const held = this.#subscriptions;
    return held === undefined ? 0 : Array.isArray(held) ? held.length : 1;
  }

  /** The subscriptions held, as a list (made for the asking when there is one). */
  get #held(): readonly Subscription[] {
    const held = this.#subscriptions;
    return held === undefined ? NO_SUBSCRIPTIONS : Array.isArray(held) ? held : [held];
  }

  /** Subscribing again to the same streams in the same format replaces, not adds. */
  repeatOf(format: Format, streams: readonly StreamRecord[]): Subscription | undefined {
    // Nearly every connection subscribes once: no key is built when there is nothing to replace.
    if (this.#subscriptions === undefined) return undefined;
    const key = subscriptionKey(format, streams);
    return this.#held.find(
      (held) =>
        held.format === format &&
        held.streams.length === streams.length &&
        subscriptionKey(format, held.streams) === key,
    );
  }

  hold(subscription: Subscription, replaced: Subscription | undefined): void {
    const held = this.#subscriptions;
    if (held === undefined) this.#subscriptions = subscription;
    else if (!Array.isArray(held)) this.#subscriptions = replaced ? subscription : [held, subscription];
    else if (replaced) held[held.indexOf(replaced)] = subscription;
    else held.push(subscription);
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
   * A publish sent to the store now; what is returned answers it, called in its turn by the
   * command queue. Every publish takes the same steps to the store, so the store gets them
   * in the order they came.
   */
  #publish(command: PublishCommand): () => Promise<void> {
    const stored = this.#storePublish(command);
    return () =>
      this.#answerPublish(command, stored).catch((error: unknown) =>
        this.#failed(error, command.requestId, PUBLISH_COMMAND),
      );
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
    if (this.#treeOnly)
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
    if (!this.#treeOnly) this.outlet.writeFrame(frame);
  }

  protected slowConsumer(): void {
    if (this.#closed) return;
    this.#log('warn', 'closing slow consumer', { bufferedBytes: this.ws.bufferedAmount });
    this.#detach();
    this.closeSlowly();
  }

  #detach(): void {
    this.#closed = true;
    for (const subscription of this.#held) this.#context.fanout.remove(subscription);
    this.#subscriptions = undefined;
    this.#commands?.clear();
    this.clearQueue();
  }

  protected onClose(code: number): void {
    this.#detach();
    this.outlet.dropHeld();
    // Only now: a connection closed for being slow holds its buffers until its socket is gone.
    if (this.#keyId !== undefined) this.#context.subscriptions.leave(this.#keyId);
    this.#keyId = undefined;
    if (logs(this.#context.logger, 'info')) this.#log('info', 'disconnected', { code });
    this.#context.sessionClosed(this);
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
