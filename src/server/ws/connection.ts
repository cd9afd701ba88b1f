import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import type { FanOut, QueuedPost } from './fanout.js';
import type { Outlet } from './outlet.js';
import { closeSlowConsumer, corkForThisTurn, countReply, OPEN, OutboundQueue, sendNow } from './outbound.js';

/** What the socket end needs to know to write. */
export interface ConnectionContext {
  maxBufferedBytes: number;
  /** Frames of queued posts come from it. */
  fanout: FanOut;
}

/**
 * Frames read from one connection before it yields to the others: the kernel hands a
 * flooding peer's frames over a megabyte at a time, and without a pause here all of them
 * were handled before any other connection was served.
 */
const FRAMES_BEFORE_YIELD = 1000;

/**
 * What `connectedAt` counts from: a time in milliseconds since the epoch is past the small
 * integers V8 keeps in a field itself, and each would be a number object of its own (16
 * bytes a connection); counted from here it is not, for the first 12 days the process runs.
 */
const CONNECTED_SINCE = Date.now();

/**
 * Milliseconds since CONNECTED_SINCE. Through `Math.floor` (the difference is whole already):
 * V8 gives its result as a small integer where it fits, and a difference as a number object.
 */
function connectedAfter(): number {
  return Math.floor(Date.now() - CONNECTED_SINCE);
}

/** A close reason is at most 123 bytes. */
export function closeReason(text: string): string {
  const bytes = Buffer.from(text);
  return bytes.length <= 123
    ? text
    : bytes
        .subarray(0, 120)
        .toString()
        .replace(/\uFFFD*$/, '') + '...';
}

/**
 * The server's sockets (ws's `WebSocket` option): each knows its connection, for the
 * listeners every connection shares (no closures of its own), and tells it of a pong itself.
 * Not by a listener: a socket's listeners are a table of its own, which holds three in 160
 * bytes and takes 256 for a fourth. A GraphQL socket has no connection, and is a plain one.
 */
export class ConnectionSocket extends WebSocket {
  connection: Connection | undefined = undefined;

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'pong' && this.connection !== undefined) this.connection.isAlive = true;
    return super.emit(event, ...args);
  }
}

function connectionOf(ws: WebSocket): Connection {
  return (ws as ConnectionSocket).connection!;
}

/**
 * The socket end of one WebSocket connection: its frames read and handed on, its writes
 * (corked for the turn, queued behind a history the peer is still reading, the slow-consumer
 * limit), its pings and its close. A Session is one, and adds the protocol. One object per
 * connection, not two: memory per idle connection is a benchmarked figure.
 */
export abstract class Connection<C extends ConnectionContext = ConnectionContext> implements Outlet {
  /** Cleared by each keep-alive round, set again by the pong. */
  isAlive = true;
  /** What this connection writes through: itself, unless a test hook wrapped it (admin/faults.ts). */
  outlet: Outlet = this;
  /** Milliseconds from CONNECTED_SINCE (`connectedAt` is the time). */
  readonly #connectedAfter = connectedAfter();
  /** Frames and posts waiting behind a history the peer is still reading; made when one is queued. */
  #queue: OutboundQueue | undefined;
  /** Frames to read before reading yields to the other connections (counted by `frameRead`). */
  #framesUntilYield = FRAMES_BEFORE_YIELD;

  constructor(
    protected readonly ws: ConnectionSocket,
    protected readonly socket: Duplex,
    protected readonly context: C,
  ) {
    ws.connection = this;
    ws.on('message', Connection.#messageListener);
    ws.on('close', Connection.#closeListener);
    ws.on('error', Connection.#errorListener);
  }

  /** A frame from the peer. */
  protected abstract onMessage(data: Buffer, isBinary: boolean): void;
  /** The socket closed. */
  protected abstract onClose(code: number): void;
  /** ws reports protocol violations (e.g. a frame over maxPayload) this way, and closes by itself. */
  protected abstract onError(error: Error): void;
  /** The peer holds more than `maxBufferedBytes`: close it as a slow consumer (`closeSlowly`). */
  protected abstract slowConsumer(): void;

  // Shared by every connection, found through the socket: three closures a connection fewer.
  static #messageListener(this: WebSocket, data: Buffer, isBinary: boolean): void {
    connectionOf(this).onMessage(data, isBinary);
  }

  static #closeListener(this: WebSocket, code: number): void {
    connectionOf(this).onClose(code);
  }

  static #errorListener(this: WebSocket, error: Error): void {
    connectionOf(this).onError(error);
  }

  /** When the connection was accepted, in milliseconds since the epoch. */
  get connectedAt(): number {
    return CONNECTED_SINCE + this.#connectedAfter;
  }

  /** A post from fan-out (a Subscriber's), through the outlet. */
  sendFrame(frame: Buffer): void {
    this.outlet.writePost(frame);
  }

  /** Posts from fan-out, written as the peer reads them, through the outlet. */
  sendQueued(posts: QueuedPost[]): void {
    this.outlet.writePosts(posts);
  }

  // The writes themselves, the connection being its own outlet: only an outlet calls these.

  writePost(frame: Buffer): void {
    this.writeFrame(frame);
  }

  writePosts(posts: QueuedPost[]): void {
    if (this.ws.readyState !== OPEN) return;
    (this.#queue ??= Connection.#newQueue(this)).pushPosts(posts);
  }

  writeFrame(frame: Buffer | string): void {
    const { ws } = this;
    if (ws.readyState !== OPEN) return;
    if (this.#queue !== undefined) this.#queue.pushFrame(frame);
    else if (!sendNow(ws, this.socket, frame, this.context.maxBufferedBytes)) this.slowConsumer();
  }

  writeReply(frame: Buffer | string): void {
    // Only what goes to the socket now (not behind a history, not to a closed one).
    if (this.ws.readyState === OPEN && this.#queue === undefined) countReply(this.ws, frame);
    this.writeFrame(frame);
  }

  writePing(): boolean {
    if (this.ws.readyState !== OPEN) return false;
    corkForThisTurn(this.socket);
    this.ws.ping();
    return true;
  }

  /** Nothing is held for this connection outside it (a wrapper may hold posts: it drops them). */
  dropHeld(): void {}

  /**
   * Made once per history queued, not per frame. Static, as the other private methods here
   * are: an instance method would give every connection a field to check it by.
   */
  static #newQueue(connection: Connection): OutboundQueue {
    const { maxBufferedBytes, fanout } = connection.context;
    return new OutboundQueue(connection.ws, connection.socket, {
      maxBufferedBytes,
      fanout,
      slowConsumer: () => connection.slowConsumer(),
      drained: (queue) => {
        if (connection.#queue === queue) connection.#queue = undefined;
      },
    });
  }

  /** Drops what waits to be written (the connection is closing). */
  protected clearQueue(): void {
    this.#queue?.clear();
    this.#queue = undefined;
  }

  /** What the peer has not read yet, and frames waiting behind a history (posts waiting not counted). */
  protected get bufferedBytes(): number {
    return this.ws.bufferedAmount + (this.#queue?.frameBytes ?? 0);
  }

  /** Closes the connection as a slow consumer, and drops the socket if the peer does not read that either. */
  protected closeSlowly(): void {
    closeSlowConsumer(this.ws);
  }

  /** Counts a frame read; every FRAMES_BEFORE_YIELD, reading stops until the other connections have been served. */
  protected frameRead(): void {
    if (--this.#framesUntilYield > 0) return;
    this.#framesUntilYield = FRAMES_BEFORE_YIELD;
    this.ws.pause();
    setImmediate(Connection.#resumeReading, this);
  }

  // Even once closed: the peer's answer to our close frame must still be read.
  static #resumeReading(connection: Connection): void {
    connection.ws.resume();
  }

  /** Whether a ping from the peer is answered: off under a `stop-pongs` or `go-silent` fault. */
  answerPings(on: boolean): void {
    // ws answers pings itself and has no public switch per socket; its own flood guard stays in place.
    (this.ws as unknown as AutoPong)._autoPong = on;
  }

  protected get answersPings(): boolean {
    return (this.ws as unknown as AutoPong)._autoPong;
  }

  /** Calls back once the socket has closed (at once if it already has). */
  onClosed(callback: () => void): void {
    if (this.ws.readyState === this.ws.CLOSED) callback();
    else this.ws.once('close', () => callback());
  }

  terminate(): void {
    this.ws.terminate();
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }
}

/** ws's switch for answering pings by itself (not public; set per socket by `answerPings`). */
interface AutoPong {
  _autoPong: boolean;
}
