import type { Writable } from 'node:stream';

export type LogFormat = 'text' | 'json';
export type LogLevel = 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  log(level: LogLevel, message: string, fields?: LogFields): void;
}

export const silentLogger: Logger = { log() {} };

function formatValue(value: string | number | boolean | null): string {
  const text = String(value);
  return /[\s"=]/.test(text) || text === '' ? JSON.stringify(text) : text;
}

/**
 * A line logger: `text` is `time level message key=value…`, `json` is one
 * object per line. Callers never pass keys in fields; the server logs user and
 * stream ids instead.
 */
export function createLogger(format: LogFormat, out: Writable, now: () => number = Date.now): Logger {
  return {
    log(level, message, fields = {}) {
      const time = new Date(now()).toISOString();
      const defined = Object.entries(fields).filter(
        (entry): entry is [string, string | number | boolean | null] => entry[1] !== undefined,
      );
      if (format === 'json') {
        out.write(`${JSON.stringify({ time, level, msg: message, ...Object.fromEntries(defined) })}\n`);
        return;
      }
      const tail = defined.map(([name, value]) => ` ${name}=${formatValue(value)}`).join('');
      out.write(`${time} ${level.padEnd(5)} ${message}${tail}\n`);
    },
  };
}
