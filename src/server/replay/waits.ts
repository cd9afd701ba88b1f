import type { Clock } from '../clock.js';

/**
 * Callbacks at times of the service's clock: a replay waits on it as releases do, so moving
 * the clock forward (`POST /_admin/clock`) brings every recorded frame now due at once.
 */
export class Waits {
  readonly #pending = new Set<{ due: number; callback: () => void; timer: NodeJS.Timeout }>();
  readonly #clock: Clock;
  readonly #stopWatching: () => void;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#stopWatching = clock.onAdvance(() => {
      const now = clock.now();
      for (const wait of [...this.#pending]) if (wait.due <= now) this.#fire(wait);
    });
  }

  /** Calls back once the clock reaches `due`; returns how to call the wait off. */
  at(due: number, callback: () => void): () => void {
    const wait = { due, callback, timer: setTimeout(() => this.#fire(wait), Math.max(0, due - this.#clock.now())) };
    this.#pending.add(wait);
    return () => {
      clearTimeout(wait.timer);
      this.#pending.delete(wait);
    };
  }

  /** Resolves once the clock reaches `due`. */
  until(due: number): Promise<void> {
    return new Promise((resolve) => this.at(due, resolve));
  }

  #fire(wait: { callback: () => void; timer: NodeJS.Timeout }): void {
    clearTimeout(wait.timer);
    if (this.#pending.delete(wait as never)) wait.callback();
  }

  close(): void {
    this.#stopWatching();
    for (const wait of this.#pending) clearTimeout(wait.timer);
    this.#pending.clear();
  }
}
