/** A burst of posts waits at most this long to be drawn: at most 30 frames a second come from posts. */
export const FRAME_MS = 33;

/**
 * Tells the view when to draw. A key draws at once (a reader waits for it); posts are
 * batched into one frame per FRAME_MS however fast they come.
 */
export class FrameStore {
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #lastMs = 0;
  readonly #listeners = new Set<() => void>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  readonly frame = (): number => this.#frame;

  /** Draw now (a key, a resize). */
  now(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#lastMs = this.#now();
    this.#frame += 1;
    for (const listener of this.#listeners) listener();
  }

  /** Draw soon: within FRAME_MS of the last frame, together with whatever else arrives meanwhile. */
  soon(): void {
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastMs + FRAME_MS - this.#now());
    this.#timer = setTimeout(() => this.now(), wait);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
