import {
  Connection,
  type ConnectedFacts,
  type ConnectionHandlers,
  type ConnectionLike,
  type ConnectionOptions,
  type ConnectionState,
  type OpenConnection,
  type ReadyInfo,
} from './connection.js';
import { isTreeFeed } from './endpoint.js';
import type { ClientError } from './errors.js';
import { SUBSCRIPTION_REQUEST_IDS } from './subscription.js';
import type { ServerMessage } from '../protocol/events.js';
import { SUBSCRIBE_COMMANDS } from '../protocol/types.js';

/** Marks a subscription's requestIds so its replies reach it and no other user of the socket. */
const SUBSCRIPTION_TAG = /^(s\d+):(.*)$/s;

function streamOf(message: ServerMessage): string | undefined {
  if (message.kind === 'post') return message.post.streamId;
  if (message.kind === 'tree') return message.item.streamId;
  return undefined;
}

/** One user's share of a SharedConnection; to its owner it looks like a connection of its own. */
class Channel implements ConnectionLike {
  readonly done: Promise<void>;
  #resolveDone!: () => void;
  #rejectDone!: (error: ClientError) => void;
  #everReady = false;
  #finished = false;
  /** The streams the service resolved this subscription to; posts of other streams are not its business. */
  streams: ReadonlySet<string> = new Set();

  constructor(
    private readonly shared: SharedConnection,
    readonly kind: 'subscription' | 'publisher',
    /** The prefix of its requestIds on the wire; none for the publisher and the connection's first subscription. */
    readonly tag: string | undefined,
    readonly handlers: ConnectionHandlers,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.#resolveDone = resolve;
      this.#rejectDone = reject;
    });
    this.done.catch(() => {});
  }

  start(): this {
    this.shared.attach(this);
    return this;
  }

  ready(info: ReadyInfo): void {
    if (this.#finished) return;
    // A share opened on a connection that is already up is new to it, not reconnected.
    const reconnected = this.#everReady;
    this.#everReady = true;
    this.handlers.onReady?.({ ...info, reconnected });
  }

  send(frame: object): boolean {
    if (this.#finished) return false;
    const tagged =
      this.tag === undefined
        ? frame
        : { ...frame, requestId: `${this.tag}:${String((frame as { requestId?: unknown }).requestId ?? '')}` };
    return this.shared.connection.send(tagged);
  }

  sendText(frame: string): boolean {
    return !this.#finished && this.shared.connection.sendText(frame);
  }

  expectReply(what: string): () => void {
    return this.shared.connection.expectReply(what);
  }

  // Reading is paused for the whole socket: its shares all wait for the slowest reader.
  pause(): void {
    this.shared.connection.pause();
  }

  resume(): void {
    this.shared.connection.resume();
  }

  get paused(): boolean {
    return this.shared.connection.paused;
  }

  get isOpen(): boolean {
    return !this.#finished && this.shared.connection.isOpen;
  }

  /** Ends this share only: a refused subscription must not take the publisher's socket down. */
  fail(error: ClientError): void {
    this.end(error);
  }

  // The socket is the shares' together: a passing failure of one reconnects them all.
  drop(reason: string): void {
    this.shared.connection.drop(reason);
  }

  async close(): Promise<void> {
    this.end();
    return this.done.catch(() => {});
  }

  end(error?: ClientError): void {
    if (this.#finished) return;
    this.#finished = true;
    this.shared.detach(this);
    if (error) this.#rejectDone(error);
    else this.#resolveDone();
  }
}

/**
 * One WebSocket under a client's subscriptions and its publisher. The protocol
 * lets one connection hold several subscriptions but sends a post once per
 * format, so posts are handed to every subscription whose streams include
 * theirs; replies are routed by a tag in the requestId.
 */
export class SharedConnection {
  readonly connection: Connection;
  /** A tree feed address: its items name no subscription, and every subscription on it follows the whole feed. */
  readonly treeFeed: boolean;
  /** The socket is open: commands can go. */
  readonly firstReady: Promise<ReadyInfo>;
  /** The service said its first word (any message): a refusal would have come by then. */
  readonly firstWord: Promise<void>;
  /** What the service's latest `connected` said; undefined until one came. */
  facts: ConnectedFacts | undefined;
  #current: ReadyInfo | undefined;
  #ended: { error?: ClientError } | undefined;
  readonly #channels = new Set<Channel>();
  #nextTag = 1;

  constructor(
    options: ConnectionOptions,
    onState?: (state: ConnectionState) => void,
    onFrame?: ConnectionHandlers['onFrame'],
  ) {
    let markReady!: (info: ReadyInfo) => void;
    this.firstReady = new Promise((resolve) => {
      markReady = resolve;
    });
    let markHeard!: () => void;
    this.firstWord = new Promise((resolve) => {
      markHeard = resolve;
    });
    this.treeFeed = isTreeFeed(options.endpoint);
    this.connection = new Connection(options, {
      onState: (state) => {
        if (state.kind !== 'ready') this.#current = undefined;
        onState?.(state);
      },
      onReady: (info) => {
        this.#current = info;
        markReady(info);
        for (const channel of [...this.#channels]) channel.ready(info);
      },
      onMessage: (message, raw) => {
        markHeard();
        this.#route(message, raw);
      },
      ...(onFrame === undefined ? {} : { onFrame }),
    });
    this.connection.done.then(
      () => this.#endAll(),
      (error: ClientError) => this.#endAll(error),
    );
  }

  /**
   * Opens a share for a subscription or the publisher. The first subscription sends its
   * commands as a connection of its own would (a service's logs read the same either way);
   * later ones tag their requestIds. The publisher's ids are numbers, never a subscription's.
   */
  opener(kind: 'subscription' | 'publisher'): OpenConnection {
    return (handlers) => {
      const tag = kind === 'subscription' && this.#nextTag++ > 1 ? `s${this.#nextTag - 1}` : undefined;
      return new Channel(this, kind, tag, handlers);
    };
  }

  attach(channel: Channel): void {
    // The service may refuse the connection (a first word, right after the upgrade) before a
    // share is opened: the share ends as the connection did.
    if (this.#ended) return channel.end(this.#ended.error);
    this.#channels.add(channel);
    if (this.#current) channel.ready(this.#current);
    // `connected` often comes in the same read as the upgrade, before a share is opened: a
    // share still learns what it said (the service's clock, its rate limit).
    if (this.#current && this.facts) channel.handlers.onMessage?.({ kind: 'connected', ...this.facts }, '');
  }

  detach(channel: Channel): void {
    this.#channels.delete(channel);
  }

  #route(message: ServerMessage, raw: string): void {
    if (message.kind === 'connected') {
      const { kind: _kind, requestId: _requestId, ...facts } = message;
      this.facts = facts;
      // Every share may use its facts (a subscription, the service's clock).
      for (const channel of [...this.#channels]) channel.handlers.onMessage?.(message, raw);
      return;
    }
    const stream = streamOf(message);
    // A tree item that names no stream (the hosted service's carry only a title) is every tree subscription's.
    if (stream !== undefined || message.kind === 'tree') {
      for (const channel of this.#channels) {
        if (channel.kind === 'subscription' && (this.treeFeed || stream === undefined || channel.streams.has(stream)))
          channel.handlers.onMessage?.(message, raw);
      }
      return;
    }
    const requestId = 'requestId' in message ? message.requestId : undefined;
    const tagged = requestId === undefined ? null : SUBSCRIPTION_TAG.exec(requestId);
    if (tagged) {
      const channel = [...this.#channels].find((candidate) => candidate.tag === tagged[1]);
      if (channel) this.#toSubscription(channel, { ...message, requestId: tagged[2] } as ServerMessage, raw);
      return;
    }
    const kind = this.#untaggedReplyOf(message, requestId);
    for (const channel of [...this.#channels]) {
      if (channel.kind !== kind || channel.tag !== undefined) continue;
      if (kind === 'subscription') this.#toSubscription(channel, message, raw);
      else channel.handlers.onMessage?.(message, raw);
    }
  }

  /** Whose an untagged reply is: by its requestId, or, from a service that does not echo them, by what it answers. */
  #untaggedReplyOf(message: ServerMessage, requestId: string | undefined): Channel['kind'] {
    if (requestId !== undefined) return SUBSCRIPTION_REQUEST_IDS.has(requestId) ? 'subscription' : 'publisher';
    if (message.kind === 'sub_ack') return 'subscription';
    return message.kind === 'error' && (SUBSCRIBE_COMMANDS as readonly string[]).includes(message.command ?? '')
      ? 'subscription'
      : 'publisher';
  }

  #toSubscription(channel: Channel, message: ServerMessage, raw: string): void {
    // The acknowledgement names the streams whose posts are this subscription's.
    if (message.kind === 'sub_ack') channel.streams = new Set(message.streamIds);
    channel.handlers.onMessage?.(message, raw);
  }

  #endAll(error?: ClientError): void {
    this.#ended = { ...(error ? { error } : {}) };
    for (const channel of [...this.#channels]) channel.end(error);
  }
}
