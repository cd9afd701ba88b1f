/** A burst of posts waits at least this long to be drawn: at most 30 frames a second come from posts. */
export const FRAME_MS = 33;
/**
 * And at least this many times as long as the last frame took to draw: under a burst on a
 * busy machine, drawing takes at most about a fifth of the time and the posts the rest.
 */
const FRAME_COST_FACTOR = 4;
/**
 * But never longer than this: one frame held up by the scheduler or by a terminal slow to
 * read must not hold the next one back for long (the newest post should show within 250 ms).
 */
const MAX_FRAME_GAP_MS = 150;

/**
 * Tells the view when to draw. A key draws at once (a reader waits for it); posts are
 * batched into one frame per FRAME_MS however fast they come. Not part of the terminal's
 * state (model.ts): nothing on the screen depends on it, only when the screen is drawn.
 */
export class FrameStore {
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #lastMs = 0;
  #drawMs = 0;
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

  /** How long the last frame took to draw and write, in ms. */
  drawn(ms: number): void {
    this.#drawMs = ms;
  }

  /** Draw soon: a frame's time after the last, together with whatever else arrives meanwhile. */
  soon(): void {
    if (this.#timer !== undefined) return;
    const gap = Math.max(FRAME_MS, Math.min(MAX_FRAME_GAP_MS, FRAME_COST_FACTOR * this.#drawMs));
    const wait = Math.max(0, this.#lastMs + gap - this.#now());
    this.#timer = setTimeout(() => this.now(), wait);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
