/** What a reader has already been shown of a post. */
export type Shown = 'hidden' | 'visible';

/**
 * Post ids already shown, with whether their content was visible, bounded:
 * the oldest ids are forgotten first. Big enough to cover a full history
 * replay (100 per stream) after a reconnect.
 */
export class SeenPosts {
  readonly #shown = new Map<string, Shown>();

  constructor(private capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
  }

  get size(): number {
    return this.#shown.size;
  }

  get(id: string): Shown | undefined {
    return this.#shown.get(id);
  }

  /** Never shrinks: a bigger subscription needs more room, a smaller one loses nothing by keeping it. */
  ensureCapacity(capacity: number): void {
    this.capacity = Math.max(this.capacity, capacity);
  }

  mark(id: string, shown: Shown): void {
    this.#shown.delete(id);
    this.#shown.set(id, shown);
    if (this.#shown.size > this.capacity) {
      const oldest = this.#shown.keys().next().value;
      if (oldest !== undefined) this.#shown.delete(oldest);
    }
  }
}
