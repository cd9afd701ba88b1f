import { timerDelay, type Clock } from '../../clock.js';

/**
 * How long an instance waits past a release's time before it claims a release another
 * instance should have claimed: one whose publisher has gone, or that a clock advance made
 * elsewhere should have fired.
 */
export const RELEASE_FALLBACK_MS = 5_000;

/**
 * When this instance runs the release claim (one script call) on a shared store. Every
 * instance knows the store's earliest pending release from the event feed; the instance
 * that published it claims it on time, and every other instance only RELEASE_FALLBACK_MS
 * later, by when the claim's `released` events have normally moved the earliest on. So one
 * due release costs one claim, not one per instance, and a release whose publisher stopped
 * still fires. Correctness never rests on this: the claim script takes each release once.
 */
export class ReleaseClaims {
  readonly #clock: Clock;
  readonly #claim: () => void;
  readonly #fallbackMs: number;
  /** The earliest pending release (Redis's order: time, then id). */
  #at = Number.POSITIVE_INFINITY;
  #id = '';
  /** Hidden posts this instance published and that are not released yet. */
  readonly #own = new Set<string>();
  /** Releases due by this store time are the claim of the instance that advanced the clock. */
  #advancedTo = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer is due (store time). */
  #dueAt = Number.POSITIVE_INFINITY;
  #claiming = false;
  #closed = false;

  constructor(clock: Clock, claim: () => void, fallbackMs = RELEASE_FALLBACK_MS) {
    this.#clock = clock;
    this.#claim = claim;
    this.#fallbackMs = fallbackMs;
  }

  /** A hidden post entered the store (seen in the feed). */
  scheduled(at: number, id: string): void {
    if (at > this.#at || (at === this.#at && id >= this.#id)) return;
    this.#at = at;
    this.#id = id;
    this.arm();
  }

  /** The store's earliest pending release as a claim left it; null when none is left. */
  next(next: readonly [number, string] | null): void {
    this.#at = next === null ? Number.POSITIVE_INFINITY : next[0];
    this.#id = next === null ? '' : next[1];
    this.arm();
  }

  /** This instance published hidden post `id`: it claims it on time. */
  published(id: string): void {
    this.#own.add(id);
    if (id === this.#id) this.arm();
  }

  released(id: string): void {
    this.#own.delete(id);
  }

  /** Another instance advanced the clock and claims what that made due. */
  advancedElsewhere(): void {
    this.#advancedTo = this.#clock.now();
    this.arm();
  }

  reset(): void {
    this.#own.clear();
    this.next(null);
  }

  /** Sets the timer for the earliest pending release (again); none while a claim runs. */
  arm(): void {
    if (this.#claiming) return;
    this.#disarm();
    if (this.#closed || this.#at === Number.POSITIVE_INFINITY) return;
    const onTime = this.#own.has(this.#id) && this.#at > this.#advancedTo;
    const now = this.#clock.now();
    this.#dueAt = onTime ? this.#at : Math.max(this.#at, now) + this.#fallbackMs;
    this.#setTimer(now);
  }

  #setTimer(now: number): void {
    this.#timer = setTimeout(this.#fire, timerDelay(this.#dueAt - now));
  }

  /**
   * A timer can fire a millisecond before the clock reads its time (timers run on another
   * clock): a claim then would find nothing due and another would follow at once.
   */
  readonly #fire = (): void => {
    const now = this.#clock.now();
    if (now < this.#dueAt) this.#setTimer(now);
    else {
      this.#timer = undefined;
      this.#claim();
    }
  };

  /** A claim starts: no timer until it ends (what it learns meanwhile is kept). */
  claimStarted(): void {
    this.#claiming = true;
    this.#disarm();
  }

  /**
   * A claim ended: the timer is set for what is pending now, or, when the claim failed (the
   * store unreachable), for another try `retryMs` later rather than in a tight loop.
   */
  claimEnded(retryMs?: number): void {
    this.#claiming = false;
    if (retryMs === undefined) return this.arm();
    if (this.#closed || this.#at === Number.POSITIVE_INFINITY) return;
    this.#timer = setTimeout(this.#claim, retryMs);
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  close(): void {
    this.#closed = true;
    this.#disarm();
  }
}
