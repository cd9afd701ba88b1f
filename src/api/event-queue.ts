import { StreamPostsError } from './errors.js';

/** Stops and restarts what fills the queue: the socket's reading. */
export interface FlowControl {
  highWaterMark: number;
  pause(): void;
  resume(): void;
}

/**
 * A bounded hand-over from socket callbacks to one `for await` consumer. A
 * consumer that falls `capacity` events behind ends the iteration with
 * `overflow` instead of growing memory without bound (the server does the same
 * to a slow reader). With `flow`, reading pauses at its high-water mark until
 * the consumer has taken everything queued, so a consumer that simply does not
 * pull holds the rest at the service instead.
 */
export class EventQueue<T> implements AsyncIterator<T> {
  readonly #items: T[] = [];
  #waiting: { resolve(result: IteratorResult<T>): void; reject(error: unknown): void } | undefined;
  #ended = false;
  #error: unknown;
  #paused = false;

  constructor(
    private readonly capacity: number,
    private readonly onReturn: () => Promise<void>,
    private readonly flow?: FlowControl,
  ) {}

  push(item: T): void {
    if (this.#ended) return;
    if (this.#waiting) {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting.resolve({ value: item, done: false });
      return;
    }
    if (this.#items.length >= this.capacity) {
      this.end(
        new StreamPostsError(
          'overflow',
          `the consumer fell ${this.capacity} events behind (bufferSize); the subscription was ended`,
        ),
      );
      return;
    }
    this.#items.push(item);
    if (this.flow && !this.#paused && this.#items.length >= this.flow.highWaterMark) {
      this.#paused = true;
      this.flow.pause();
    }
  }

  #resumeFlow(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.flow?.resume();
  }

  /** Ends after what is queued; with an error, the consumer gets it after the queued events. */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    // The socket is shared: a subscription that ends must not leave it paused for the others.
    this.#resumeFlow();
    this.#error = error;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (!waiting) return;
    if (error === undefined) waiting.resolve({ value: undefined, done: true });
    else waiting.reject(error);
    this.#error = undefined;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) {
      const item = this.#items.shift()!;
      if (this.#items.length === 0) this.#resumeFlow();
      return Promise.resolve({ value: item, done: false });
    }
    if (this.#ended) {
      const error = this.#error;
      this.#error = undefined;
      return error === undefined ? Promise.resolve({ value: undefined, done: true }) : Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** `break` out of `for await`: stop delivering and drop what is queued. */
  async return(): Promise<IteratorResult<T>> {
    this.#items.length = 0;
    this.end();
    await this.onReturn();
    return { value: undefined, done: true };
  }
}
