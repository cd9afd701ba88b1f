/** How far the service's clock may be from this machine's before its word is not taken: 100 years. */
export const SERVICE_CLOCK_RANGE_MS = 100 * 365.25 * 86_400_000;

/**
 * The service's time (`connected.serverTime`) in epoch ms, when it is within 100 years of
 * `localNow`. A time further off is a broken or hostile service's: counting from it would
 * put dates past what a Date holds.
 */
export function serviceTimeMs(serverTime: string | undefined, localNow: number = Date.now()): number | undefined {
  const at = serverTime === undefined ? Number.NaN : Date.parse(serverTime);
  return Math.abs(at - localNow) <= SERVICE_CLOCK_RANGE_MS ? at : undefined;
}
