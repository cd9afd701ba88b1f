import type { ContentType } from '../protocol/types.js';
import { serviceTimeMs } from '../api/internal.js';

const RELATIVE = /^\+(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export const RELEASE_AT_FORMS = 'an ISO 8601 date-time with a time zone, or a time from now such as +10m, +2h, +1d';

/** Whether a release time is relative (`+10m`): counted from a clock, best the service's. */
export function isRelativeReleaseAt(text: string): boolean {
  return RELATIVE.test(text.trim());
}

/**
 * `+10m`, `+2h`, `+1d` (also s and w) from `now`, to the whole second above (the time a
 * confirmation shows is the time sent, and `+3s` hides a post at least 3 s), or an ISO 8601
 * date-time passed through for validation.
 */
export function resolveReleaseAt(text: string, now: number): string {
  const relative = RELATIVE.exec(text.trim());
  if (!relative) return text.trim();
  const at = now + Number(relative[1]) * UNIT_MS[relative[2]!.toLowerCase()]!;
  return new Date(Math.ceil(at / 1000) * 1000).toISOString();
}

export interface PublishDefaults {
  streamId?: string | undefined;
  contentType: ContentType;
}

/**
 * "Now" on the service's clock: `connected.serverTime` (which `/_admin/clock` moves) when the
 * service sent one within 100 years of ours, else ours.
 */
export function serviceClock(serverTime: string | undefined, localNow: number = Date.now()): () => number {
  const at = serviceTimeMs(serverTime, localNow);
  const offset = at === undefined ? 0 : at - localNow;
  return () => Date.now() + offset;
}

/** Why a relative release time counts from this machine's clock, when the service's was not taken. */
export function localClockNotice(serverTime: string | undefined, releaseAt: string): string | undefined {
  if (serverTime === undefined || serviceTimeMs(serverTime) !== undefined) return undefined;
  return `the service's time (connected.serverTime ${serverTime}) is more than 100 years from this machine's clock, and is ignored: ${releaseAt} counts from this machine's clock`;
}

/** The refusal of a release time at or before `now` (a post meant to be hidden would be visible at once). */
export function pastReleaseAt(releaseAt: string, now: number): string | undefined {
  if (Date.parse(releaseAt) > now) return undefined;
  return `--release-at ${formatReleaseTime(releaseAt)}: release time is in the past (the service's time is ${formatReleaseTime(new Date(Math.floor(now / 1000) * 1000).toISOString())}); give a later time, or --allow-past to publish at once`;
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/**
 * A release time as people read it, in the local zone, with the zone: "2026-11-23 14:00 UTC",
 * "2026-11-23 15:00 +01:00". Seconds and milliseconds only when the time has them, so what is
 * shown is exactly what is sent. `sameDay`: the date is left out when it is today.
 */
export function formatReleaseTime(iso: string, options: { now?: number; sameDay?: boolean } = {}): string {
  const date = new Date(iso);
  const offsetMinutes = -date.getTimezoneOffset();
  const zone =
    offsetMinutes === 0
      ? 'UTC'
      : `${offsetMinutes > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`;
  const day = `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  let time = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  if (date.getSeconds() !== 0 || date.getMilliseconds() !== 0) time += `:${pad(date.getSeconds())}`;
  if (date.getMilliseconds() !== 0) time += `.${pad(date.getMilliseconds(), 3)}`;
  if (options.sameDay === true) {
    const today = new Date(options.now ?? Date.now());
    const todayDay = `${today.getFullYear()}-${pad(today.getMonth() + 1)}-${pad(today.getDate())}`;
    if (todayDay === day) return `${time} ${zone}`;
  }
  return `${day} ${time} ${zone}`;
}
