import { InvalidArgumentError } from 'commander';
import ms from 'ms';

/** "10m", "30s", "1500ms", "2h", "1d"; a bare number is milliseconds. */
export function parseDuration(text: string): number {
  let value: number | undefined;
  try {
    value = /^\d+$/.test(text.trim()) ? Number(text) : ms(text.trim() as ms.StringValue);
  } catch {
    // ms throws on empty or over-long input; the message below says what is expected.
  }
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`expected a duration such as 500ms, 30s, 10m, 2h or 1d, got "${text}"`);
  }
  return Math.round(value);
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
