// startServer's `replay…` options checked (each error names its option) and the recording
// read and checked, as the core server takes them. Light to load: serve's flags check
// `--replay-speed` with it, and the recording's reader comes only with a recording.
import type { Recording } from '../protocol/recording.js';
import type { ReplaySettings } from '../server/replay/replay.js';
import { StreamPostsError } from './errors.js';
import { optionError, optionalBoolean, optionalString, optionalStringList } from './options.js';

/** startServer's options about a recording served back (docs/record-replay.md). */
export interface ReplayOptions {
  /** A recording made by `serve --record` (or `startServer({ record })`): its path, or the recording itself. */
  replay?: string | Recording;
  /** `'recorded'` (default): the recorded offsets; a number: that many times faster; `'max'`: the order kept, no waits. */
  replaySpeed?: 'recorded' | 'max' | number;
  /** `'shifted'` (default): recorded date-times moved so that the recording's start is the server's; `'as-recorded'`. */
  replayTimes?: 'shifted' | 'as-recorded';
  /** Fields of client frames and request bodies never compared: a name anywhere, or a dotted path from the top. */
  replayIgnore?: string[];
  /** What the recording has no answer for goes to the simulated service (default: close 4400, or 404). */
  replayFallback?: boolean;
}

const MAX_SPEED = 1_000_000;

/** `replaySpeed` as a divisor of the recorded offsets: 1, N, or Infinity for `max`. */
export function replaySpeedOf(value: unknown): number {
  if (value === undefined || value === 'recorded') return 1;
  if (value === 'max') return Infinity;
  const speed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof speed !== 'number' || !Number.isFinite(speed) || speed <= 0 || speed > MAX_SPEED)
    throw optionError(
      'range',
      'replaySpeed',
      `replaySpeed must be 'recorded', 'max' or a number above 0 up to ${MAX_SPEED}, got ${JSON.stringify(value)}`,
    );
  return speed;
}

async function loadRecording(value: unknown): Promise<Recording> {
  const { parseRecording, readRecording, RecordingError } = await import('../server/replay/recording-file.js');
  try {
    if (typeof value === 'string') return await readRecording(value);
    if (value !== null && typeof value === 'object') return parseRecording(value, 'replay');
  } catch (error) {
    if (error instanceof RecordingError)
      throw new StreamPostsError('invalid-recording', error.message, { cause: error, path: error.where });
    throw error;
  }
  throw optionError('type', 'replay', `replay must be the path of a recording or a recording, got ${typeof value}`);
}

/** The core's replay settings, or none without `replay` (the other options then need it). */
export async function replaySettings(given: Record<string, unknown>): Promise<{ replay?: ReplaySettings }> {
  const times = optionalString(given, 'replayTimes');
  if (times !== undefined && times !== 'shifted' && times !== 'as-recorded')
    throw optionError('type', 'replayTimes', `replayTimes must be 'shifted' or 'as-recorded', got '${times}'`);
  const ignore = optionalStringList(given, 'replayIgnore') ?? [];
  const fallback = optionalBoolean(given, 'replayFallback') ?? false;
  const speed = replaySpeedOf(given['replaySpeed']);
  if (given['replay'] === undefined) {
    const without = ['replaySpeed', 'replayTimes', 'replayIgnore', 'replayFallback'].find(
      (name) => given[name] !== undefined,
    );
    if (without !== undefined) throw optionError('type', without, `${without} needs replay (a recording to serve)`);
    return {};
  }
  const empty = ignore.find((field) => field.trim() === '');
  if (empty !== undefined) throw optionError('type', 'replayIgnore', 'replayIgnore: a field name cannot be empty');
  return {
    replay: {
      recording: await loadRecording(given['replay']),
      speed,
      shiftTimes: times !== 'as-recorded',
      ignore,
      fallback,
    },
  };
}
