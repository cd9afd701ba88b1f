/** Posts the header's median latency is taken over. */
export const LATENCY_WINDOW = 100;

/**
 * The feed's latency over the last LATENCY_WINDOW live posts: from a post's creation (or
 * release) to its arrival here, both on the service's clock.
 */
export class Latencies {
  readonly #window: number[] = [];
  #next = 0;

  add(ms: number): void {
    if (!Number.isFinite(ms)) return;
    if (this.#window.length < LATENCY_WINDOW) this.#window.push(ms);
    else this.#window[this.#next] = ms;
    this.#next = (this.#next + 1) % LATENCY_WINDOW;
  }

  /** The median, or undefined before the first live post. */
  median(): number | undefined {
    if (this.#window.length === 0) return undefined;
    const sorted = [...this.#window].sort((a, b) => a - b);
    const middle = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  }
}

/** `3s`, `2m`, `1h`, `4d`: how long ago, in at most three characters. */
export function ageText(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.min(99, Math.floor(seconds / 86_400))}d`;
}

/** `12 ms`, `1.4 s`. */
export function latencyText(ms: number): string {
  return Math.abs(ms) < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
