/** Time as the service sees it. Injected everywhere so tests never sleep. */
export interface Clock {
  now(): number;
  /** Called after the clock jumps forward, so timers computed from it can re-arm. */
  onAdvance(listener: () => void): () => void;
}

/** Wall-clock time plus an offset that only grows (`POST /_admin/clock`). */
export class AdjustableClock implements Clock {
  #offsetMs = 0;
  readonly #listeners = new Set<() => void>();

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  get offsetMs(): number {
    return this.#offsetMs;
  }

  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(`advance must be a non-negative integer of milliseconds, got ${ms}`);
    }
    this.#offsetMs += ms;
    for (const listener of this.#listeners) listener();
  }

  /** Moves to an offset shared by several instances (it can only grow), as if advanced here. */
  syncOffset(offsetMs: number): void {
    if (offsetMs <= this.#offsetMs) return;
    this.#offsetMs = offsetMs;
    for (const listener of this.#listeners) listener();
  }

  onAdvance(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** The longest delay a Node timer keeps: past it, setTimeout warns and fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A wait as a timer can hold it: none below 0, and a longer one re-armed when this fires. */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(ms, 0), MAX_TIMER_MS);
}
