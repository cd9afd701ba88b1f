import type { Clock } from '../clock.js';

/** Node keeps a timer's delay in 32 bits: a longer wait is taken in parts. */
const MAX_TIMER_MS = 2_147_483_647;

interface Wait {
  due: number;
  callback: () => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Callbacks at times of the service's clock: a replay waits on it as releases do, so moving
 * the clock forward (`POST /_admin/clock`) brings every recorded frame now due at once.
 */
export class Waits {
  readonly #pending = new Set<Wait>();
  readonly #clock: Clock;
  readonly #stopWatching: () => void;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#stopWatching = clock.onAdvance(() => {
      for (const wait of [...this.#pending]) this.#check(wait);
    });
  }

  /** Calls back once the clock reaches `due`; returns how to call the wait off. */
  at(due: number, callback: () => void): () => void {
    const wait: Wait = { due, callback, timer: undefined };
    this.#pending.add(wait);
    this.#check(wait);
    return () => {
      clearTimeout(wait.timer);
      this.#pending.delete(wait);
    };
  }

  /** Resolves once the clock reaches `due`. */
  until(due: number): Promise<void> {
    return new Promise((resolve) => this.at(due, resolve));
  }

  /** Calls back a wait that is due, or (re-)arms its timer for what is left. */
  #check(wait: Wait): void {
    if (!this.#pending.has(wait)) return;
    clearTimeout(wait.timer);
    const left = wait.due - this.#clock.now();
    if (left <= 0) {
      this.#pending.delete(wait);
      wait.callback();
      return;
    }
    wait.timer = setTimeout(() => this.#check(wait), Math.min(left, MAX_TIMER_MS));
  }

  close(): void {
    this.#stopWatching();
    for (const wait of this.#pending) clearTimeout(wait.timer);
    this.#pending.clear();
  }
}
