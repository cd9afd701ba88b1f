/** What a reader has already been shown of a post. */
export type Shown = 'hidden' | 'visible';

/** What one remembered id costs besides its characters: the map entry and the string's header. */
const ENTRY_BYTES = 64;

/**
 * Post ids already shown, with whether their content was visible, bounded by count and
 * by bytes (an id's characters count two bytes each, as V8 may hold them): the oldest ids
 * are forgotten first. Big enough to cover a full history replay (100 per stream) after a
 * reconnect; the byte bound holds whatever ids a service sends.
 */
export class SeenPosts {
  readonly #shown = new Map<string, Shown>();
  #bytes = 0;

  constructor(
    private capacity: number,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    if (!(maxBytes > 0)) throw new RangeError(`maxBytes must be positive, got ${maxBytes}`);
  }

  get size(): number {
    return this.#shown.size;
  }

  /** What the remembered ids cost, as counted against `maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }

  get(id: string): Shown | undefined {
    return this.#shown.get(id);
  }

  /** Never shrinks: a bigger subscription needs more room, a smaller one loses nothing by keeping it. */
  ensureCapacity(capacity: number): void {
    this.capacity = Math.max(this.capacity, capacity);
  }

  mark(id: string, shown: Shown): void {
    if (this.#shown.delete(id)) this.#bytes -= SeenPosts.#cost(id);
    this.#shown.set(id, shown);
    this.#bytes += SeenPosts.#cost(id);
    while (this.#shown.size > 1 && (this.#shown.size > this.capacity || this.#bytes > this.maxBytes)) {
      const oldest = this.#shown.keys().next().value as string;
      this.#shown.delete(oldest);
      this.#bytes -= SeenPosts.#cost(oldest);
    }
  }

  static #cost(id: string): number {
    return ENTRY_BYTES + id.length * 2;
  }
}
