/** Thrown to the caller of a Redis command that got no reply in time (the command may still run). */
export class CommandTimeoutError extends Error {}

/**
 * A time limit on Redis commands with one timer for all of them: the client library's own
 * limit arms a timer and an AbortSignal per command, thousands a second under load, each
 * kept until it would have fired. Here a command waiting holds one map entry, dropped as
 * soon as it settles; once a tick, those sent `limitMs` ago or more are rejected, as the
 * library's would be.
 */
export class CommandDeadline {
  /** Each waiting command's reject, with the tick it was sent in (the map keeps send order). */
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

  /** `command`'s outcome, or a CommandTimeoutError once it has waited for the limit. */
  bound<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiting = this.#waiting;
      waiting.set(reject, this.#tick);
      command.then(
        (value) => {
          waiting.delete(reject);
          resolve(value);
        },
        (error: unknown) => {
          waiting.delete(reject);
          reject(error);
        },
      );
    });
  }

  #check(): void {
    this.#tick += 1;
    const cutoff = this.#tick - this.#limitTicks;
    for (const [reject, sentAt] of this.#waiting) {
      if (sentAt >= cutoff) break;
      this.#waiting.delete(reject);
      reject(new CommandTimeoutError(`no reply from Redis within ${this.limitMs} ms`));
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
