import type { RateLimit } from '../protocol/events.js';
import { backoffDelay, type BackoffOptions } from './backoff.js';

const REFUSAL_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 5_000 };
/**
 * Part of a stated burst left unused: the service counts commands as it reads them, and
 * after a pause of its own (a busy or starved process) it reads the ones sent meanwhile all
 * at once. A fifth of the default burst (80 commands) absorbs a 400 ms pause at the
 * default rate; past that a refusal can let a later command in first. It costs 80 commands'
 * worth of time once per connection (0.4 s at the default rate).
 */
const BURST_HEADROOM = 0.2;

/** How the service is limiting the rate, as a publisher reports it. */
export interface RateLimitWait {
  /** The limit `connected` stated; undefined when the service did not state one. */
  stated: RateLimit | undefined;
  /** `rate-limited` replies so far on this connection's life. */
  refusals: number;
  /** Commands answered per second since the waiting began. */
  answeredPerSecond: number;
  /** How long the publisher has waited on the limit, in ms. */
  waitingMs: number;
}

/**
 * When the next command may go, so that commands reach the service in the order they
 * were given. With a limit the service stated, commands are spaced by a copy of its
 * token bucket (with some headroom); without one, as many go as are given until the
 * first `rate-limited`, after which one goes at a time and the window grows by one per
 * answer. Either way a refusal holds everything back for a backoff, so the refused
 * command is sent again before any later one.
 */
export class SendPacer {
  #stated: RateLimit | undefined;
  #tokens = Number.POSITIVE_INFINITY;
  #filledAt: number;
  /** Commands sent on the current connection (they took tokens of its bucket). */
  #sentHere = 0;
  #window = Number.POSITIVE_INFINITY;
  #holdUntil = 0;
  #refusalsInRow = 0;
  refusals = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {
    this.#filledAt = now();
  }

  get stated(): RateLimit | undefined {
    return this.#stated;
  }

  /** A new connection: the service's bucket for it starts full. The last stated limit holds until told otherwise. */
  connectionOpened(): void {
    this.#sentHere = 0;
    this.#holdUntil = 0;
    this.#fill();
  }

  /** What `connected` stated (undefined: no limit stated). Commands already sent on this connection took from the bucket. */
  state(limit: RateLimit | undefined): void {
    this.#stated = limit;
    this.#fill();
    this.#tokens = Math.max(0, this.#tokens - this.#sentHere);
  }

  #capacity(): number {
    const stated = this.#stated;
    return stated === undefined
      ? Number.POSITIVE_INFINITY
      : Math.max(1, Math.floor(stated.burst * (1 - BURST_HEADROOM)));
  }

  #fill(): void {
    this.#tokens = this.#capacity();
    this.#filledAt = this.now();
  }

  #refill(now: number): void {
    const stated = this.#stated;
    if (stated === undefined) return;
    this.#tokens = Math.min(this.#capacity(), this.#tokens + ((now - this.#filledAt) / 1000) * stated.perSecond);
    this.#filledAt = now;
  }

  /**
   * Milliseconds until one more command may go (0: now), given how many sent ones are
   * still unanswered; Infinity when it must wait for an answer.
   */
  delay(unanswered: number): number {
    const now = this.now();
    if (now < this.#holdUntil) return this.#holdUntil - now;
    if (unanswered >= this.#window) return Number.POSITIVE_INFINITY;
    this.#refill(now);
    const stated = this.#stated;
    if (stated === undefined || this.#tokens >= 1) return 0;
    return ((1 - this.#tokens) / stated.perSecond) * 1000;
  }

  /** One command went. */
  sent(): void {
    this.#sentHere += 1;
    this.#tokens -= 1;
  }

  /** A command was answered, not refused for the rate: the window grows back. */
  answered(): void {
    this.#refusalsInRow = 0;
    if (Number.isFinite(this.#window)) this.#window += 1;
  }

  /** A command was refused with `rate-limited`: one at a time, after a backoff. */
  refused(): void {
    this.refusals += 1;
    this.#window = 1;
    if (this.#stated !== undefined) this.#tokens = Math.min(this.#tokens, 0);
    const now = this.now();
    // The other refusals of a window sent before the hold are the same news, not a longer wait.
    if (now < this.#holdUntil) return;
    this.#holdUntil = now + backoffDelay(this.#refusalsInRow++, REFUSAL_BACKOFF, this.random);
  }
}
