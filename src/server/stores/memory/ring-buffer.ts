/** Keeps the last `capacity` items; older ones fall off. */
export class RingBuffer<T> {
  readonly #items: (T | undefined)[];
  #start = 0;
  #length = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.#items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.#length;
  }

  /** Adds an item; returns the one that fell off to make room, if any. */
  push(item: T): T | undefined {
    const end = (this.#start + this.#length) % this.capacity;
    const dropped = this.#length < this.capacity ? undefined : this.#items[end];
    this.#items[end] = item;
    if (this.#length < this.capacity) this.#length += 1;
    else this.#start = (this.#start + 1) % this.capacity;
    return dropped;
  }

  /** Items oldest first. */
  toArray(): T[] {
    return this.last(this.#length);
  }

  /** The newest `count` items (all of them if there are fewer), oldest first. */
  last(count: number): T[] {
    const n = Math.min(Math.max(count, 0), this.#length);
    const out = new Array<T>(n);
    const from = this.#start + this.#length - n;
    for (let i = 0; i < n; i += 1) out[i] = this.#items[(from + i) % this.capacity] as T;
    return out;
  }

  clear(): void {
    this.#items.fill(undefined);
    this.#start = 0;
    this.#length = 0;
  }
}
