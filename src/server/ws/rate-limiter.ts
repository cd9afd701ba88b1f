import type { Clock } from '../clock.js';

/** A token bucket: `ratePerSecond` sustained, bursts up to `burst`. */
export class TokenBucket {
  #tokens: number;
  #updatedAt: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {
    if (!(ratePerSecond > 0)) throw new RangeError(`ratePerSecond must be positive, got ${ratePerSecond}`);
    if (!(burst >= 1)) throw new RangeError(`burst must be at least 1, got ${burst}`);
    this.#tokens = burst;
    this.#updatedAt = clock.now();
  }

  /**
   * Whether the bucket is full at the clock's time: a bucket made now would be the same from
   * here on (both stay full until a token is taken, and take it alike).
   */
  get full(): boolean {
    const refill = ((this.clock.now() - this.#updatedAt) / 1000) * this.ratePerSecond;
    return this.#tokens + Math.max(refill, 0) >= this.burst;
  }

  tryTake(): boolean {
    const now = this.clock.now();
    const refill = ((now - this.#updatedAt) / 1000) * this.ratePerSecond;
    this.#tokens = Math.min(this.burst, this.#tokens + Math.max(refill, 0));
    this.#updatedAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
