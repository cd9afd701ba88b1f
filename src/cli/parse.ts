import { InvalidArgumentError } from 'commander';
import bytes from 'bytes';
import ms from 'ms';

/** "10m", "30s", "1500ms", "2h", "1d"; a bare number is milliseconds. */
export function parseDuration(text: string): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : ms(text.trim() as ms.StringValue);
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`expected a duration such as 500ms, 30s, 10m, 2h or 1d, got "${text}"`);
  }
  return Math.round(value);
}

/** "8MiB", "512kb", "1048576". */
export function parseBytes(text: string): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : bytes.parse(text.trim());
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
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
