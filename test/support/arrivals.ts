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

  /**
   * Resolves once `check` holds for a command's output; rejects, showing the output, when the
   * command ends first (`ended`, whose word `endedWhat` is) or `timeoutMs` passes.
   */
  async untilOutput(
    output: { readonly stdout: string; readonly stderr: string },
    check: (out: { stdout: string; stderr: string }) => boolean,
    what: string,
    ended: { readonly is: () => boolean; readonly what: string },
    timeoutMs: number,
  ): Promise<void> {
    const failure = (why: string) =>
      new Error(`${why} waiting for ${what}\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`);
    await this.until(
      () => {
        if (check(output)) return true;
        if (ended.is()) throw failure(ended.what);
        return false;
      },
      timeoutMs,
      () => failure('timed out'),
    );
  }
}
