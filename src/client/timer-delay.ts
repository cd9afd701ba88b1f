/** The longest delay a Node timer keeps: past it, setTimeout warns and fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A delay a timer can hold: whole milliseconds from 1 to MAX_TIMER_MS. A longer wait is
 * re-armed when this one fires; a timer of 0 in a loop would spin the process.
 */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(1, Math.ceil(ms)), MAX_TIMER_MS);
}
