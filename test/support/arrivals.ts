/**
 * Lets a test wait until a condition holds, checked again each time something arrives
 * (a message, a ping, a close) rather than on a polling timer.
 */
export class Arrivals {
  readonly #waiters = new Set<() => void>();

  /** Something arrived: every waiter checks its condition again. */
  notify(): void {
    for (const wake of this.#waiters) wake();
  }

  /**
   * Resolves once `ready()` returns true; rejects with `timedOut()` after `timeoutMs`.
   * `ready` may throw to give up early (say, on a close).
   */
  async until(ready: () => boolean, timeoutMs: number, timedOut: () => Error): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!ready()) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) throw timedOut();
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, remaining);
        this.#waiters.add(wake);
      });
    }
  }
}
