import { readFile } from 'node:fs/promises';
import type { Remembered } from './model.js';

/** How long after a change the session is written: a burst of pins writes once. */
const WRITE_AFTER_MS = 300;

export interface MemoryOptions {
  /** The config file. */
  path: string;
  /** The profile whose `terminal` section keeps the session. */
  profile: string;
  /** Writes the whole config file atomically (readable by its owner only: it holds keys). */
  write: (config: object) => Promise<void>;
  /** Says a write that failed (in the footer). */
  report: (text: string) => void;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Keeps what a session leaves (mutes, solo, pins, the rules added in the terminal) in the
 * profile's `terminal` section. Each write reads the file again and changes only those
 * fields: the user's other settings, and any edit made meanwhile, are kept. A file that is
 * not JSON is left as it is, and the footer says the session was not kept.
 */
export class SessionMemory {
  readonly #options: MemoryOptions;
  #state: (() => Remembered) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: MemoryOptions) {
    this.#options = options;
  }

  /** Something to keep changed: written a moment later. */
  soon(state: () => Remembered): void {
    this.#state = state;
    this.#timer ??= setTimeout(() => this.#flush(), WRITE_AFTER_MS);
  }

  /** Writes what is pending, and waits for every write. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) this.#flush();
    await this.#writing;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const state = this.#state?.();
    if (state === undefined) return;
    this.#writing = this.#writing.then(() => this.#write(state));
  }

  async #write(state: Remembered): Promise<void> {
    const { path, profile, write, report } = this.#options;
    try {
      let config: unknown = {};
      try {
        config = JSON.parse(await readFile(path, 'utf8'));
      } catch (error) {
        // The parser's message quotes the file, and the file holds keys.
        if (error instanceof SyntaxError) throw new Error('it is not valid JSON', { cause: error });
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      if (!isRecord(config)) throw new Error('it is not a JSON object');
      const profiles = (config['profiles'] ??= {});
      if (!isRecord(profiles)) throw new Error('its "profiles" is not an object');
      const kept = (profiles[profile] ??= {});
      if (!isRecord(kept)) throw new Error(`its profile "${profile}" is not an object`);
      const section = isRecord(kept['terminal']) ? kept['terminal'] : {};
      kept['terminal'] = { ...section, ...state };
      await write(config);
    } catch (error) {
      report(`the session was not kept in ${path}: ${(error as Error).message}`);
    }
  }
}
