import type { LogFields, LogLevel, Logger } from '../../src/server/logger.js';

export interface LogLine {
  at: number;
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/** A logger that keeps every line with performance.now(), and can call back on each. */
export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  readonly #listeners = new Set<(line: LogLine) => void>();

  log(level: LogLevel, message: string, fields: LogFields = {}): void {
    const line = { at: performance.now(), level, message, fields };
    this.lines.push(line);
    for (const listener of this.#listeners) listener(line);
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
