// Calendar date, 'T', hours:minutes, optional seconds and fraction, then a
// time zone: Z, ±hh:mm, ±hhmm or ±hh. A date-time without a zone is ambiguous.
const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)(Z|[+-]\d{2}(?::?\d{2})?)$/i;

/** Epoch milliseconds of an ISO 8601 date-time with a time zone, or undefined. */
export function parseIsoDateTime(text: string): number | undefined {
  const match = ISO_DATE_TIME.exec(text.trim());
  if (!match) return undefined;
  const [, local = '', zone = ''] = match;
  // Date.parse rolls 2030-02-30 over into March; a date that does not exist is an error.
  const [year, month, day] = local.slice(0, 10).split('-').map(Number) as [number, number, number];
  // setUTCFullYear, not Date.UTC, which reads years 0-99 as 1900-1999.
  const calendar = new Date(0);
  calendar.setUTCFullYear(year, month - 1, day);
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) {
    return undefined;
  }
  let offset = zone.toUpperCase();
  if (offset !== 'Z')
    offset =
      offset.length === 3 ? `${offset}:00` : offset.length === 5 ? `${offset.slice(0, 3)}:${offset.slice(3)}` : offset;
  const ms = Date.parse(`${local.replace(',', '.')}${offset}`);
  if (Number.isNaN(ms)) return undefined;
  // An offset can carry 9999-12-31 into year 10000 (or 0000-01-01 back into year -1), which
  // toISOString writes as "+010000-…": a date this parser would then refuse to read back.
  const utcYear = new Date(ms).getUTCFullYear();
  return utcYear < 0 || utcYear > 9999 ? undefined : ms;
}

/** An epoch-millisecond number as an ISO string, or undefined when no Date can hold it. */
export function epochToIso(ms: number): string | undefined {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The second `isoTime` last formatted, and its text up to the milliseconds. */
let isoSecond = NaN;
let isoSecondText = '';

/**
 * `new Date(ms).toISOString()` of a whole number of milliseconds, formatted in full once a
 * second: every greeting and every post carries a time, and V8 formats a date through printf.
 */
export function isoTime(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    const text = new Date(second * 1000).toISOString();
    // Years past 9999 (or before 0) are not written in four digits: formatted whole.
    if (text.length !== 24) return new Date(ms).toISOString();
    isoSecond = second;
    isoSecondText = text.slice(0, 20);
  }
  const millis = ms - second * 1000;
  return `${isoSecondText}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}
