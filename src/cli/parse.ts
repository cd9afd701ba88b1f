import { InvalidArgumentError } from '@commander-js/extra-typings';
import ms from 'ms';
import { splitUrls } from '../api/internal.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';

export const DURATION_FORMS = 'a number of seconds (5, 1.5) or a number with a unit: 500ms, 30s, 10m, 2h, 1d';

/** "10m", "30s", "1500ms", "2h", "1d"; a bare number is seconds (`--idle-timeout 5` waits 5 s). */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  let value: number | undefined;
  try {
    value = /^\d+(?:\.\d+)?$/.test(trimmed) ? Number(trimmed) * 1000 : ms(trimmed as ms.StringValue);
  } catch {
    // ms throws on empty or over-long input; the message below says what is expected.
  }
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`expected ${DURATION_FORMS}, got "${text}"`);
  }
  return Math.round(value);
}

/** The longest wait a Node timer can hold (2^31-1 ms); a longer one would fire at once. */
export const MAX_TIMER_MS = 24 * 24 * 3600 * 1000;

/** A bound on a wait, kept by a timer: from 1 ms to 24 days. */
export function parseTimeout(text: string): number {
  const value = parseDuration(text);
  if (value < 1) throw new InvalidArgumentError(`expected a duration above zero: ${DURATION_FORMS}, got "${text}"`);
  if (value > MAX_TIMER_MS) throw new InvalidArgumentError(`expected a duration of at most 24d, got "${text}"`);
  return value;
}

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i;
const UNIT_BYTES: Record<string, number> = { b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** "8MiB", "512KiB", "8mb", "1048576": k, m and g are binary multiples, with or without "iB"/"B". */
export function parseBytes(text: string): number {
  const match = SIZE.exec(text.trim());
  const value = match ? Number(match[1]) * UNIT_BYTES[(match[2] ?? 'b')[0]!.toLowerCase()]! : NaN;
  if (!Number.isFinite(value) || value < 1) {
    throw new InvalidArgumentError(`expected a size such as 512KiB, 8MiB or a number of bytes, got "${text}"`);
  }
  return Math.floor(value);
}

export function parseNonNegativeInteger(text: string): number {
  if (!/^\d+$/.test(text.trim())) throw new InvalidArgumentError(`expected a non-negative integer, got "${text}"`);
  return Number(text);
}

export function parsePort(text: string): number {
  const port = parseNonNegativeInteger(text);
  if (port > 65535) throw new InvalidArgumentError(`expected a port from 0 to 65535, got "${text}"`);
  return port;
}

/** `--url`, repeatable and comma-separated; a tree feed address keeps the commas of its query. */
export function collectUrls(text: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...splitUrls(text)];
}

/** A repeatable option whose values may also be comma-separated: `--x a,b --x c` is [a, b, c]. */
export function collectList(text: string, previous: string[] | undefined): string[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return [...(previous ?? []), ...items];
}

/** `--last`: recent posts per stream, as many as the service keeps. */
export function lastPosts(text: string): number {
  const value = parseNonNegativeInteger(text);
  if (value > MAX_LAST_POSTS)
    throw new InvalidArgumentError(
      `expected 0 to ${MAX_LAST_POSTS} (the service keeps the last ${MAX_LAST_POSTS} posts per stream), got "${text}"`,
    );
  return value;
}

/** Where a local `serve` answers admin requests: `faults`' default `--admin-url`. */
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8787/_admin';
