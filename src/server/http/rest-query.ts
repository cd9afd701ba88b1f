import { parseIsoDateTime } from '../../protocol/dates.js';
import { ProtocolError } from '../../protocol/errors.js';
import { isPlainObject } from '../../protocol/objects.js';

const INTEGER = /^\d{1,15}$/;

/**
 * A query parameter's value; an empty one (`?isFeatured=`) counts as absent, as form
 * tools send every field of their schema whether filled in or not.
 */
export function queryValue(url: URL, name: string): string | undefined {
  const value = url.searchParams.get(name);
  return value === null || value === '' ? undefined : value;
}

export function queryInteger(url: URL, name: string, min: number, max: number, fallback: number): number;
export function queryInteger(url: URL, name: string, min: number, max: number): number | undefined;
export function queryInteger(url: URL, name: string, min: number, max: number, fallback?: number): number | undefined {
  const text = queryValue(url, name);
  if (text === undefined) return fallback;
  const value = INTEGER.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
    throw new ProtocolError('invalid-argument', `${name} must be an integer ${range}`);
  }
  return value;
}

export function queryBoolean(url: URL, name: string): boolean | undefined {
  const text = queryValue(url, name);
  if (text === undefined) return undefined;
  if (text !== 'true' && text !== 'false') throw new ProtocolError('invalid-argument', `${name} must be true or false`);
  return text === 'true';
}

export function queryEnum<T extends string>(url: URL, name: string, values: readonly T[]): T | undefined {
  const text = queryValue(url, name);
  if (text === undefined) return undefined;
  if (!(values as readonly string[]).includes(text)) {
    throw new ProtocolError('invalid-argument', `${name} must be one of ${values.join(', ')}`);
  }
  return text as T;
}

/** Epoch ms of an ISO 8601 date-time parameter. */
export function queryDate(url: URL, name: string): number | undefined {
  const text = queryValue(url, name);
  if (text === undefined) return undefined;
  const ms = parseIsoDateTime(text);
  if (ms === undefined) {
    throw new ProtocolError('invalid-argument', `${name} must be an ISO 8601 date-time, e.g. 2026-12-01T09:30:00Z`);
  }
  return ms;
}

/**
 * Paging tokens are base64url JSON objects: opaque to clients, but checked here, so a token
 * that was cut short, edited or made for another list is refused instead of misread.
 */
export function encodeToken(fields: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
}

export function decodeToken(text: string, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    // Either base64 alphabet: a client may have re-encoded it.
    value = /^[A-Za-z0-9+/_-]{1,512}={0,2}$/.test(text) ? JSON.parse(Buffer.from(text, 'base64').toString('utf8')) : 0;
  } catch {
    value = undefined;
  }
  if (!isPlainObject(value)) {
    throw new ProtocolError(
      'invalid-argument',
      `${name} is malformed: pass back the ${name} of a previous page as it was`,
    );
  }
  return value;
}
