import { timerDelay, type Clock } from '../../clock.js';
import { MinHeap } from './min-heap.js';

interface Entry {
  at: number;
  seq: number;
  id: string;
}

/**
 * One timer for every pending release: a min-heap of release times, with the
 * timer armed for the earliest. Due entries fire in release-time order, ties
 * in scheduling order.
 */
export class ReleaseScheduler {
  readonly #heap = new MinHeap<Entry>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  readonly #clock: Clock;
  readonly #onDue: (id: string) => void;
  readonly #stopListening: () => void;
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Infinity;
  #seq = 0;

  constructor(clock: Clock, onDue: (id: string) => void) {
    this.#clock = clock;
    this.#onDue = onDue;
    this.#stopListening = clock.onAdvance(() => this.#fireDue());
  }

  get size(): number {
    return this.#heap.size;
  }

  schedule(id: string, at: number): void {
    this.#heap.push({ at, seq: this.#seq++, id });
    if (at < this.#armedFor) this.#arm();
  }

  clear(): void {
    this.#heap.clear();
    this.#disarm();
  }

  close(): void {
    this.clear();
    this.#stopListening();
  }

  #fireDue(): void {
    const now = this.#clock.now();
    for (let next = this.#heap.peek(); next && next.at <= now; next = this.#heap.peek()) {
      this.#heap.pop();
      this.#onDue(next.id);
    }
    this.#arm();
  }

  #arm(): void {
    this.#disarm();
    const next = this.#heap.peek();
    if (!next) return;
    const delay = timerDelay(next.at - this.#clock.now());
    this.#armedFor = next.at;
    this.#timer = setTimeout(() => this.#fireDue(), delay);
    // A pending release must not keep a finished process alive.
    this.#timer.unref();
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }
}
