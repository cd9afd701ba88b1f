import type { QueuedPost } from '../ws/fanout.js';
import { QUEUED_POST_BYTES } from '../ws/outbound.js';

/** What a gate delivers to: the connection's own writes, which keep their order and backpressure. */
export interface GateTarget {
  sendFrame(frame: Buffer): void;
  sendQueued(posts: QueuedPost[]): void;
  /** The held posts outgrew the slow-consumer limit: the connection is dropped as a slow reader would be. */
  overflow(): void;
}

interface Held {
  item: Buffer | QueuedPost[];
  /** performance.now() at which it may go; 0 = at once. */
  due: number;
}

/**
 * Holds the posts bound for one connection while a `pause-deliveries` or `delay-deliveries`
 * fault applies to it, and lets them go in the order they came: paused, they wait until the
 * fault is cleared; delayed, each goes after its delay (never before one that came earlier).
 */
export class DeliveryGate {
  paused = false;
  delayMs = 0;
  jitterMs = 0;
  readonly #held: Held[] = [];
  #heldBytes = 0;
  #lastDue = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly target: GateTarget,
    readonly maxHeldBytes: number,
    /** Called once the gate holds nothing and neither pauses nor delays: it can be taken away. */
    readonly onIdle: () => void,
    readonly random: () => number = Math.random,
  ) {}

  /** Held, or on their way after a delay: nothing waits and nothing will. */
  get idle(): boolean {
    return this.#held.length === 0 && !this.paused && this.delayMs === 0 && this.jitterMs === 0;
  }

  set(mode: { paused: boolean; delayMs: number; jitterMs: number }): void {
    this.paused = mode.paused;
    this.delayMs = mode.delayMs;
    this.jitterMs = mode.jitterMs;
    if (mode.delayMs === 0 && mode.jitterMs === 0) {
      // No delay any more: what was on its way goes now, in order.
      for (const held of this.#held) held.due = 0;
      this.#lastDue = 0;
    }
    this.#pump();
  }

  deliver(item: Buffer | QueuedPost[]): void {
    const delay = this.delayMs + Math.floor(this.random() * this.jitterMs);
    const due = delay === 0 ? this.#lastDue : Math.max(performance.now() + delay, this.#lastDue);
    this.#lastDue = due;
    this.#held.push({ item, due });
    this.#heldBytes += Buffer.isBuffer(item) ? item.length : item.length * QUEUED_POST_BYTES;
    if (this.#heldBytes > this.maxHeldBytes) {
      this.stop();
      this.target.overflow();
      return;
    }
    this.#pump();
  }

  /** Drops what is held (the connection is gone). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#held.length = 0;
    this.#heldBytes = 0;
  }

  #pump(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const held = this.#held;
    while (!this.paused && held.length > 0) {
      const head = held[0]!;
      const wait = head.due - performance.now();
      if (wait > 0) {
        this.#timer = setTimeout(() => this.#pump(), Math.ceil(wait));
        return;
      }
      held.shift();
      const { item } = head;
      this.#heldBytes -= Buffer.isBuffer(item) ? item.length : item.length * QUEUED_POST_BYTES;
      if (Buffer.isBuffer(item)) this.target.sendFrame(item);
      else this.target.sendQueued(item);
    }
    if (this.idle) this.onIdle();
  }
}
