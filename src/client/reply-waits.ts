import { timerDelay } from './timer-delay.js';

/**
 * The replies a connection awaits, each with its deadline, on one timer: a window of
 * publishes costs one timer, not one per post. Every wait has the same length, so
 * deadlines come in the order the waits were added, and a wait that is started again
 * (see `onDue`) goes to the end with a later one.
 */
export interface ReplyWait<T> {
  readonly what: string;
  /** What the owner needs to know of the wait when it runs out (the socket it was sent on). */
  readonly context: T;
  deadline: number;
  settled: boolean;
}

export class ReplyWaits<T> {
  readonly #queue: ReplyWait<T>[] = [];
  /** Index of the first wait that may still be pending. */
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  #firing = false;

  constructor(
    private readonly timeoutMs: number,
    /**
     * A wait ran out. Returns true to start it again (the owner was not reading, so its
     * reply cannot have arrived); otherwise it is over, and the owner acts (it may clear all).
     */
    private readonly onDue: (wait: ReplyWait<T>) => boolean,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a wait; the function returned settles it, answering whether it was still pending. */
  add(what: string, context: T): () => boolean {
    const wait: ReplyWait<T> = { what, context, deadline: this.now() + this.timeoutMs, settled: false };
    this.#queue.push(wait);
    if (this.#timer === undefined && !this.#firing) this.#arm(this.timeoutMs);
    return () => {
      if (wait.settled) return false;
      wait.settled = true;
      this.#skipSettled();
      return true;
    };
  }

  /** How many waits are pending. */
  get size(): number {
    let pending = 0;
    for (let i = this.#head; i < this.#queue.length; i++) if (!this.#queue[i]!.settled) pending += 1;
    return pending;
  }

  /** Forgets every wait (the socket they were sent on is gone). */
  clear(): void {
    for (let i = this.#head; i < this.#queue.length; i++) this.#queue[i]!.settled = true;
    this.#queue.length = 0;
    this.#head = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #skipSettled(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.settled) this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
      clearTimeout(this.#timer);
      this.#timer = undefined;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#fire(), timerDelay(ms));
  }

  #fire(): void {
    this.#timer = undefined;
    this.#firing = true;
    try {
      while (this.#head < this.#queue.length) {
        const wait = this.#queue[this.#head]!;
        if (wait.settled) {
          this.#head += 1;
          continue;
        }
        // Timers count whole milliseconds and this clock fractions of one: a timer firing for this
        // deadline may read it a fraction early, and that wait is due (as a timer of its own would
        // be, so its owner hears before waits armed after it). A whole millisecond early is not.
        if (wait.deadline - this.now() >= 1) break;
        this.#head += 1;
        if (this.onDue(wait)) {
          wait.deadline = this.now() + this.timeoutMs;
          this.#queue.push(wait);
        } else {
          wait.settled = true;
        }
      }
    } finally {
      this.#firing = false;
    }
    this.#skipSettled();
    const next = this.#queue[this.#head];
    if (next !== undefined && this.#timer === undefined) this.#arm(next.deadline - this.now());
  }
}
