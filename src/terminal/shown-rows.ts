import type { Entry } from './entry.js';

/** What the feed's rows are worked out from: the model's posts and its filters. */
export interface RowSource {
  /** The posts held, in arrival order (oldest first). */
  entries(): readonly Entry[];
  /** Whether a post shows with the filters, search and pause as they are. */
  shown(entry: Entry): boolean;
  /** The last arrival a pause lets show; undefined when not paused. */
  pausedAt(): number | undefined;
  /** Arrivals taken onto a whole list one by one before it is worked out again (the buffer's size). */
  readonly capacity: number;
}

/**
 * The feed as shown, newest first, worked out only as far as asked: a search key finds the
 * rows a frame shows, the rest are found when asked for. Posts that come, and go, while
 * the filters stay are put on top of (and taken off the bottom of) a whole list instead of
 * trying every post again.
 */
export class ShownRows {
  readonly #source: RowSource;
  #version = 0;
  /** As far as worked out: `next` is the index in `entries()` of the next post to try (newest first), -1 once every post was. */
  #cache: { version: number; rows: Entry[]; next: number } | undefined;
  /** Posts that came since the list was worked out whole (a key pressed while posts arrive waits for none). */
  #added: Entry[] = [];
  #dropped = new Set<Entry>();

  constructor(source: RowSource) {
    this.#source = source;
  }

  /** The posts or the filters changed: the list is worked out again when next asked for. */
  invalidate(): void {
    this.#version += 1;
    this.#added = [];
    this.#dropped.clear();
  }

  /** Whether the list is worked out whole for the filters and posts as they are. */
  get complete(): boolean {
    const cached = this.#cache;
    return cached !== undefined && cached.version === this.#version && cached.next === -1;
  }

  /**
   * A post came, and `dropped` went to make room for it. False when the list must be worked
   * out again instead (it was not whole, or too many came since).
   */
  arrived(entry: Entry, dropped: readonly Entry[]): boolean {
    if (!this.complete || this.#added.length >= this.#source.capacity) return false;
    this.#added.push(entry);
    for (const gone of dropped) this.#dropped.add(gone);
    return true;
  }

  /**
   * The rows worked out so far, newest first, trying older posts until `enough` says so or
   * every post was tried. Posts that came and went since are applied to a whole list.
   */
  scan(enough: (rows: readonly Entry[]) => boolean): Entry[] {
    let cached = this.#cache;
    if (cached?.version !== this.#version) {
      cached = { version: this.#version, rows: [], next: this.#newestShowable() };
      this.#cache = cached;
      this.#added = [];
      this.#dropped.clear();
    } else if (this.#added.length > 0 || this.#dropped.size > 0) {
      // Only a whole list takes them (`arrived`): the gone are the oldest, at the bottom, where shown.
      let end = cached.rows.length;
      while (end > 0 && this.#dropped.has(cached.rows[end - 1]!)) end -= 1;
      const rows: Entry[] = [];
      for (let index = this.#added.length - 1; index >= 0; index--) {
        const entry = this.#added[index]!;
        if (!this.#dropped.has(entry) && this.#source.shown(entry)) rows.push(entry);
      }
      cached.rows = rows.concat(cached.rows.slice(0, end));
      this.#added = [];
      this.#dropped.clear();
    }
    const { rows } = cached;
    const entries = this.#source.entries();
    let next = cached.next;
    while (next >= 0 && !enough(rows)) {
      const entry = entries[next]!;
      next -= 1;
      if (this.#source.shown(entry)) rows.push(entry);
    }
    cached.next = next;
    return rows;
  }

  /** How many rows are shown, or undefined while the list is not worked out whole. */
  count(): number | undefined {
    if (!this.complete) return undefined;
    // Posts that came since are counted in (`scan` takes them without trying any other).
    return this.scan(() => true).length;
  }

  /**
   * The index in `entries()` of the newest post the pause lets show: posts are held in arrival
   * order, so those that came after the pause (thousands, in a long pause) are not tried one by one.
   */
  #newestShowable(): number {
    const entries = this.#source.entries();
    const pausedAt = this.#source.pausedAt();
    if (pausedAt === undefined || entries.length === 0 || entries[entries.length - 1]!.seq <= pausedAt)
      return entries.length - 1;
    let low = -1;
    let high = entries.length - 1;
    // entries[low] came before the pause or low is -1; entries[high] came after it.
    while (high - low > 1) {
      const middle = (low + high) >> 1;
      if (entries[middle]!.seq <= pausedAt) low = middle;
      else high = middle;
    }
    return low;
  }
}
