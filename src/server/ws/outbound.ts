// What a session writes: corked for the turn, queued behind a history the peer is still
// reading, and the close of a peer that stopped reading. The per-turn state lives here, not
// on each session; the queue exists only while something waits in it, so an idle connection
// carries none of it.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { CLOSE_SLOW_CONSUMER } from '../../protocol/close-codes.js';
import { QueuedPost, type FanOut } from './fanout.js';

// A slow consumer gets its close frame queued behind the data it is not
// reading; past this grace the socket is dropped so its buffers are freed.
const SLOW_CONSUMER_GRACE_MS = 1000;
export const OPEN = 1;
const TEXT_FRAME = { binary: false } as const;
/**
 * What one post waiting in a history costs the server (the reference and its place in the
 * queue), counted against the slow-consumer limit: otherwise a peer that never reads and
 * subscribes again and again could queue histories without end.
 */
export const QUEUED_POST_BYTES = 64;
/** Queued history is written in slices of about this many bytes, at least, each when the last has drained. */
const MIN_QUEUED_SLICE_BYTES = 64 * 1024;

/** Sockets corked in this turn of the event loop, uncorked together before any I/O. */
const corkedThisTurn: Duplex[] = [];
/**
 * Replies written in this turn, still corked, by socket: not a sign the peer stopped
 * reading. A window of pipelined publishes of large posts gets as many acks at once, each
 * with its post.
 */
const repliesThisTurn = new Map<WebSocket, number>();

function uncorkTurn(): void {
  for (const socket of corkedThisTurn) socket.uncork();
  corkedThisTurn.length = 0;
  repliesThisTurn.clear();
}

/**
 * Everything sent in this turn of the event loop goes out in one write: a history of
 * hundreds of posts, several posts published together, or a ping and its keep-alive frame
 * cost one system call, not one per frame. Uncorked before any I/O, so nothing waits.
 */
export function corkForThisTurn(socket: Duplex): void {
  if (socket.writableCorked !== 0) return;
  socket.cork();
  if (corkedThisTurn.push(socket) === 1) process.nextTick(uncorkTurn);
}

/** Writes a frame now (corked for the turn); false once the peer holds more unread than `maxBufferedBytes`. */
export function sendNow(ws: WebSocket, socket: Duplex, frame: Buffer | string, maxBufferedBytes: number): boolean {
  corkForThisTurn(socket);
  ws.send(frame, TEXT_FRAME);
  // Replies of this turn are looked up only past the limit: a fan-out write costs one comparison.
  const buffered = ws.bufferedAmount;
  return buffered <= maxBufferedBytes || buffered - (repliesThisTurn.get(ws) ?? 0) <= maxBufferedBytes;
}

/** A reply about to be written now: counted against the slow-consumer limit from the next turn on. */
export function countReply(ws: WebSocket, frame: Buffer | string): void {
  const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
  repliesThisTurn.set(ws, (repliesThisTurn.get(ws) ?? 0) + bytes);
}

export const SLOW_CONSUMER_REASON = 'slow consumer';

/** Closes a peer that stopped reading, and drops its socket if it does not read the close frame either. */
export function closeSlowConsumer(ws: WebSocket): void {
  ws.close(CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON);
  setTimeout(() => ws.terminate(), SLOW_CONSUMER_GRACE_MS).unref();
}

/** What a queue needs of its connection. */
export interface QueueOwner {
  readonly maxBufferedBytes: number;
  readonly fanout: FanOut;
  /** The peer holds more than `maxBufferedBytes`: it is closed as a slow consumer. */
  slowConsumer(): void;
  /** Everything queued was written: the queue can be let go. */
  drained(queue: OutboundQueue): void;
}

/**
 * Frames and posts waiting for the peer to read what was written before them. Writes posts
 * as the peer reads them: a slice at a time, the next once the socket has drained. A history
 * of 1,000 posts of 64 KiB is more than the slow-consumer limit, and a reader taking it as
 * fast as it can must not be mistaken for one that stopped. Made when a history is queued,
 * let go once it is written.
 */
export class OutboundQueue {
  #queued: (QueuedPost | Buffer | string | undefined)[] = [];
  #at = 0;
  #frameBytes = 0;
  #posts = 0;
  #awaitingDrain = false;
  #cleared = false;

  constructor(
    readonly ws: WebSocket,
    readonly socket: Duplex,
    readonly owner: QueueOwner,
  ) {}

  /** Bytes of frames waiting (posts not counted): what `GET /_admin/connections` adds to the socket's buffer. */
  get frameBytes(): number {
    return this.#frameBytes;
  }

  /** A frame behind the history still being written: order holds, and what waits counts as queued. */
  pushFrame(frame: Buffer | string): void {
    this.#queued.push(frame);
    this.#frameBytes += frame.length;
    if (this.#bytes() > this.owner.maxBufferedBytes) this.owner.slowConsumer();
  }

  pushPosts(posts: QueuedPost[]): void {
    for (const post of posts) this.#queued.push(post);
    this.#posts += posts.length;
    if (this.#bytes() > this.owner.maxBufferedBytes) this.owner.slowConsumer();
    else this.#write();
  }

  /** Drops what waits (the connection is closing). */
  clear(): void {
    this.#cleared = true;
    this.#queued = [];
    this.#at = 0;
    this.#frameBytes = 0;
    this.#posts = 0;
  }

  /** What this peer has the server hold for it: written and unread, and waiting to be written. */
  #bytes(): number {
    return this.ws.bufferedAmount + this.#frameBytes + this.#posts * QUEUED_POST_BYTES;
  }

  #write(): void {
    const { ws, owner } = this;
    if (ws.readyState !== OPEN || this.#cleared) return;
    const queued = this.#queued;
    const slice = Math.max(owner.maxBufferedBytes / 2, MIN_QUEUED_SLICE_BYTES);
    while (this.#at < queued.length && ws.bufferedAmount < slice) {
      const next = queued[this.#at]!;
      queued[this.#at++] = undefined;
      let frame: Buffer | string;
      if (next instanceof QueuedPost) {
        frame = owner.fanout.queuedFrame(next);
        this.#posts -= 1;
      } else {
        frame = next;
        this.#frameBytes -= next.length;
      }
      corkForThisTurn(this.socket);
      ws.send(frame, TEXT_FRAME);
    }
    if (this.#at === queued.length) {
      this.clear();
      owner.drained(this);
    } else if (!this.#awaitingDrain) {
      // Past a slice the socket is over its high-water mark, so 'drain' is due.
      this.#awaitingDrain = true;
      this.socket.once('drain', () => {
        this.#awaitingDrain = false;
        this.#write();
      });
    }
  }
}
