import type { Logger } from '../../logger.js';
import type { PostRecord } from '../store.js';
import { ProtocolError } from '../../../protocol/errors.js';
import { troubleError } from './store-health.js';

/** An event as the scripts announce it on the feed, numbered (`s`) by Redis. */
export type EventMessage =
  | { s: number; t: 'created'; p: PostRecord }
  | { s: number; t: 'released'; p: PostRecord; n?: [number, string] | null }
  | { s: number; t: 'clock'; o: number; i: string }
  | { s: number; t: 'reset'; e?: string; o?: number; l?: boolean }
  | { s: number; t: 'targets'; u: string; k: string; v: string[] };

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Why a command waiting for an event is refused when the feed skipped some. */
function missedEvents(): ProtocolError {
  return new ProtocolError('unavailable', 'the service missed events from its store (Redis); retry');
}

/** Where every event message names its type: `{"s":<seq>,` then this, for a reset. */
const RESET_TYPE = '"t":"reset"';

export function unavailable(command?: string): Error {
  return troubleError('unreachable', command);
}

/**
 * The Redis store's event feed on this instance: events are dispatched one at a time, in the
 * order Redis numbered them, each once; a gap, or a load that replaced what was followed, is
 * an interruption (subscribers must replay). What an event does here is the store's `apply`.
 */
export class EventFeed {
  /** The last event this instance dispatched; undefined until it knows where the feed stands. */
  lastSeq: number | undefined;
  /** The load of the seed this instance follows (a random id each load), `''` until known. */
  epoch = '';
  /** Whether the subscription to the feed is up. */
  up = false;
  readonly #waiters: Waiter[] = [];
  readonly #interruptListeners = new Set<(reason: string) => void>();
  readonly #logger: Logger;
  readonly #apply: (message: EventMessage) => void;

  constructor(logger: Logger, apply: (message: EventMessage) => void) {
    this.#logger = logger;
    this.#apply = apply;
  }

  /** Whether this instance follows the feed and knows where it stands. */
  get following(): boolean {
    return this.up && this.lastSeq !== undefined;
  }

  /** Where Redis says the feed stands (event `at` of the load `epoch`), read apart from it. */
  standsAt(at: number, epoch: string): void {
    // Another load, numbered from where this instance's count had not reached: a loss whose
    // reset event has not come yet (it is then dropped as seen, like every event up to `at`).
    if (this.lastSeq !== undefined && epoch !== this.epoch && at < this.lastSeq)
      this.interrupt(`the store's event counter went back from ${this.lastSeq} to ${at}`);
    if (this.lastSeq === undefined || at >= this.lastSeq) this.epoch = epoch;
    this.lastSeq = Math.max(this.lastSeq ?? 0, at);
  }

  onMessage(text: string): void {
    // Every message starts `{"s":<seq>,`: one this instance already dispatched (its own post,
    // sent at its publish's reply) is dropped without parsing it. A reset is always read: a
    // load after a loss numbers its events from 1 again.
    const last = this.lastSeq;
    const comma = text.indexOf(',', 5);
    const reset = text.startsWith(RESET_TYPE, comma + 1);
    if (!reset && last !== undefined && Number(text.slice(5, comma)) <= last) return;
    const message = JSON.parse(text) as EventMessage;
    if (reset && message.t === 'reset' && this.#resetLost(message, last)) {
      this.epoch = message.e ?? '';
      this.interrupt(
        message.s <= (last ?? 0)
          ? `the store's event counter went back from ${last} to ${message.s}; it lost its data`
          : 'the store lost its data; the seed was loaded again',
      );
    } else if (last !== undefined && message.s <= last) return;
    else if (last !== undefined && message.s !== last + 1)
      this.interrupt(`missed events ${last + 1} to ${message.s - 1}`, missedEvents());
    this.dispatch(message);
  }

  /** A reset this instance has not seen that replaced what it followed (a load after a loss). */
  #resetLost(message: { s: number; e?: string; l?: boolean }, last: number | undefined): boolean {
    if (last === undefined || (message.e ?? '') === this.epoch) return false;
    return message.l === true || message.s <= last;
  }

  /** Event `message.s`, the next in order: applied, then whoever waits for it goes on. */
  dispatch(message: EventMessage): void {
    this.lastSeq = message.s;
    if (message.t === 'reset' && message.e !== undefined) this.epoch = message.e;
    this.#apply(message);
    for (let i = this.#waiters.length - 1; i >= 0; i -= 1) {
      const waiter = this.#waiters[i]!;
      if (waiter.seq <= message.s) {
        this.#waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  /**
   * Resolves once this instance has dispatched event `seq`: a publisher's subscribers here
   * get its post before its ack, and history read at `seq` joins the live feed without a
   * gap or a repeat.
   */
  awaitSeq(seq: number): Promise<void> {
    if (this.lastSeq !== undefined && this.lastSeq >= seq) return Promise.resolve();
    if (!this.up) return Promise.reject(unavailable());
    return new Promise((resolve, reject) => this.#waiters.push({ seq, resolve, reject }));
  }

  /**
   * Events may have been missed: where the feed stands is unknown until it is read again.
   * Whoever waits for an event is refused naming the cause: by default, the store lost its data.
   */
  interrupt(reason: string, refusal: Error = troubleError('reloading')): void {
    this.lastSeq = undefined;
    this.#logger.log('warn', 'events may have been missed; subscribers must replay', { reason });
    this.#rejectWaiters(refusal);
    this.announceLoss(reason);
  }

  /** A loss outside the feed's order (keys evicted): subscribers must replay; the feed goes on. */
  announceLoss(reason: string): void {
    for (const listener of this.#interruptListeners) listener(reason);
  }

  onInterrupted(listener: (reason: string) => void): () => void {
    this.#interruptListeners.add(listener);
    return () => this.#interruptListeners.delete(listener);
  }

  close(): void {
    this.#interruptListeners.clear();
    this.#rejectWaiters(unavailable());
  }

  #rejectWaiters(error: Error): void {
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
  }
}
