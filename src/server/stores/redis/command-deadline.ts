/** Thrown to the caller of a Redis command that got no reply in time (the command may still run). */
export class CommandTimeoutError extends Error {}

/**
 * A time limit on Redis commands with one timer for all of them: the client library's own
 * limit arms a timer and an AbortSignal per command, thousands a second under load, each
 * kept until it would have fired. Here a command waiting holds one map entry, dropped as
 * soon as it settles; once a tick, those sent `limitMs` ago or more are told so.
 */
export class CommandDeadline {
  /** What each waiting command does when it is late, with the tick it was sent in (the map keeps send order). */
  readonly #waiting = new Map<(error: Error) => void, number>();
  readonly #timer: NodeJS.Timeout;
  readonly #limitTicks: number;
  #tick = 0;

  constructor(
    private readonly limitMs: number,
    tickMs = 500,
  ) {
    this.#limitTicks = Math.max(1, Math.ceil(limitMs / tickMs));
    this.#timer = setInterval(() => this.#check(), tickMs).unref();
  }

  /**
   * `command`'s outcome, or a CommandTimeoutError once it has waited for the limit. Only for
   * a command whose effect does not matter if it runs after all (a read, an idempotent write):
   * the caller is told it failed while Redis may still run it.
   */
  bound<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#watch(command, reject).then(resolve, reject);
    });
  }

  /** `command` itself, whose wait goes on past the limit: `late` is told when it is reached. */
  late<T>(command: Promise<T>, late: (error: CommandTimeoutError) => void): Promise<T> {
    return this.#watch(command, late);
  }

  #watch<T>(command: Promise<T>, late: (error: CommandTimeoutError) => void): Promise<T> {
    const waiting = this.#waiting;
    // An entry of its own, even when callers share one `late`.
    const entry = (error: CommandTimeoutError) => late(error);
    waiting.set(entry, this.#tick);
    const settled = () => waiting.delete(entry);
    command.then(settled, settled);
    return command;
  }

  #check(): void {
    this.#tick += 1;
    const cutoff = this.#tick - this.#limitTicks;
    for (const [late, sentAt] of this.#waiting) {
      if (sentAt >= cutoff) break;
      this.#waiting.delete(late);
      late(new CommandTimeoutError(`no reply from Redis within ${this.limitMs} ms`));
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
