import type { LogFields, LogLevel, Logger } from '../../src/server/logger.js';
import { Arrivals } from './arrivals.js';

export interface LogLine {
  at: number;
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/** A logger that keeps every line with performance.now(), can call back on each, and be waited on. */
export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  readonly #listeners = new Set<(line: LogLine) => void>();
  readonly #arrivals = new Arrivals();

  log(level: LogLevel, message: string, fields: LogFields = {}): void {
    const line = { at: performance.now(), level, message, fields };
    this.lines.push(line);
    for (const listener of this.#listeners) listener(line);
    this.#arrivals.notify();
  }

  /** Waits until a line matches. */
  until(match: (line: LogLine) => boolean, timeoutMs = 10_000): Promise<void> {
    return this.#arrivals.until(
      () => this.lines.some(match),
      timeoutMs,
      () => new Error(`no such log line; got ${JSON.stringify(this.lines)}`),
    );
  }

  onLine(listener: (line: LogLine) => void): void {
    this.#listeners.add(listener);
  }

  /** The server's id of the connection that most recently logged `connected`. */
  lastConnectedId(): string {
    const line = this.lines.findLast((entry) => entry.message === 'connected');
    if (!line || typeof line.fields['conn'] !== 'string') throw new Error('no connection has been logged');
    return line.fields['conn'];
  }

  find(message: string, conn: string): LogLine | undefined {
    return this.lines.find((line) => line.message === message && line.fields['conn'] === conn);
  }
}
