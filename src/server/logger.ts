import type { Writable } from 'node:stream';
import { isoTime } from '../protocol/dates.js';
import { secretScrubber } from '../protocol/redact.js';

export type LogFormat = 'text' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  log(level: LogLevel, message: string, fields?: LogFields): void;
  /**
   * Whether a line of this level would be written: a caller on a hot path (every connection)
   * asks before building the line's fields. Absent: every level is.
   */
  enabled?(level: LogLevel): boolean;
}

export const silentLogger: Logger = { log() {}, enabled: () => false };

/** Whether `logger` writes lines of `level` (a logger that cannot say is taken to). */
export function logs(logger: Logger, level: LogLevel): boolean {
  return logger.enabled?.(level) ?? true;
}

/**
 * What a terminal or a log viewer could act on or display misleadingly: C0 and C1 controls
 * (ESC starts title, clipboard and link sequences), DEL, bidi overrides and isolates,
 * zero-width characters and the Unicode line separators. Log values come from the network.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g;

function escapeChar(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * Escapes what JSON.stringify leaves raw (C1, bidi, zero-width). Applied to JSON text, the
 * result is still valid JSON meaning the same: the added escapes are JSON escapes.
 */
function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

function formatValue(value: string | number | boolean | null): string {
  const text = String(value);
  UNSAFE.lastIndex = 0;
  return /[\s"=\\]/.test(text) || UNSAFE.test(text) || text === '' ? escapeUnsafe(JSON.stringify(text)) : text;
}

const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * A line logger (lines below `minLevel` are dropped): `text` is `time level message key=value…`, `json` is one object per
 * line. Every value is escaped here, once for all callers, so nothing a client sends
 * (a requestId, a path, a stream id) reaches the operator's terminal as a control sequence.
 */
export function createLogger(
  format: LogFormat,
  out: Pick<Writable, 'write'>,
  now: () => number = Date.now,
  minLevel: LogLevel = 'info',
): Logger {
  const least = LEVEL_RANK[minLevel];
  return {
    enabled: (level) => LEVEL_RANK[level] >= least,
    log(level, message, fields = {}) {
      if (LEVEL_RANK[level] < least) return;
      const time = isoTime(now());
      const defined = Object.entries(fields).filter(
        (entry): entry is [string, string | number | boolean | null] => entry[1] !== undefined,
      );
      if (format === 'json') {
        out.write(`${escapeUnsafe(JSON.stringify({ time, level, msg: message, ...Object.fromEntries(defined) }))}\n`);
        return;
      }
      const tail = defined.map(([name, value]) => ` ${escapeUnsafe(name)}=${formatValue(value)}`).join('');
      out.write(`${time} ${level.padEnd(5)} ${escapeUnsafe(message)}${tail}\n`);
    },
  };
}

/** Adds the same fields to every line (e.g. which worker of `serve --workers` wrote it). */
export function withFields(logger: Logger, extra: LogFields): Logger {
  return {
    enabled: (level) => logs(logger, level),
    log: (level, message, fields = {}) => {
      if (logs(logger, level)) logger.log(level, message, { ...extra, ...fields });
    },
  };
}

export const SECRET_MARKER = '[key]';

/**
 * Wraps a logger so that no known secret (an API key of the seed, the admin token) is
 * logged, wherever a client put it (a requestId, a stream id list, a path) and however it
 * was escaped (`sp%5Fdemo…` in a path is the same key to the URL's reader).
 */
export function scrubSecrets(logger: Logger, secrets: Iterable<string>): Logger {
  // Nothing is written, so nothing needs scrubbing (a line is not even looked at).
  if (logger === silentLogger) return logger;
  const list = [...secrets].filter((secret) => secret.length > 0);
  if (list.length === 0) return logger;
  const scrub = secretScrubber(list, SECRET_MARKER);

  return {
    enabled: (level) => logs(logger, level),
    log(level, message, fields = {}) {
      // A line below the logger's level is dropped before it is scanned.
      if (!logs(logger, level)) return;
      const scrubbed: LogFields = {};
      for (const [name, value] of Object.entries(fields))
        scrubbed[name] = typeof value === 'string' ? scrub(value) : value;
      logger.log(level, scrub(message), scrubbed);
    },
  };
}
