// startServer's `replay…` options (checked in startServer's option table) and the recording
// read and checked, as the core server takes them. Light to load: serve's flags check
// `--replay-speed` with it, and the recording's reader comes only with a recording.
import type { Recording } from '../protocol/recording.js';
import type { ReplaySettings } from '../server/replay/replay.js';
import { StreamPostsError } from './errors.js';
import { optionError } from './options.js';

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

/** `replaySpeed` as a divisor of the recorded offsets: 1, N, or Infinity for `max`; undefined for a bad one. */
export function parseReplaySpeed(value: unknown): number | undefined {
  if (value === undefined || value === 'recorded') return 1;
  if (value === 'max') return Infinity;
  const speed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof speed !== 'number' || !Number.isFinite(speed) || speed <= 0 || speed > MAX_SPEED ? undefined : speed;
}

/** What a bad `replaySpeed` is told. */
export function replaySpeedWords(value: unknown): string {
  return `replaySpeed must be 'recorded', 'max' or a number above 0 up to ${MAX_SPEED}, got ${JSON.stringify(value)}`;
}

/** `replaySpeed` as a divisor of the recorded offsets (`--replay-speed` too); a bad one is a RangeError. */
export function replaySpeedOf(value: unknown): number {
  const speed = parseReplaySpeed(value);
  if (speed === undefined) throw optionError('range', 'replaySpeed', replaySpeedWords(value));
  return speed;
}

async function loadRecording(value: string | Recording): Promise<Recording> {
  const { parseRecording, readRecording, RecordingError } = await import('../server/replay/recording-file.js');
  try {
    return typeof value === 'string' ? await readRecording(value) : parseRecording(value, 'replay');
  } catch (error) {
    if (error instanceof RecordingError)
      throw new StreamPostsError('invalid-recording', error.message, { cause: error, path: error.where });
    throw error;
  }
}

/** The core's replay settings from checked options, or none without `replay` (the other options then need it). */
export async function replaySettings(given: ReplayOptions): Promise<{ replay?: ReplaySettings }> {
  if (given.replay === undefined) {
    const without = (['replaySpeed', 'replayTimes', 'replayIgnore', 'replayFallback'] as const).find(
      (name) => given[name] !== undefined,
    );
    if (without !== undefined) throw optionError('type', without, `${without} needs replay (a recording to serve)`);
    return {};
  }
  return {
    replay: {
      recording: await loadRecording(given.replay),
      speed: replaySpeedOf(given.replaySpeed),
      shiftTimes: given.replayTimes !== 'as-recorded',
      ignore: given.replayIgnore ?? [],
      fallback: given.replayFallback ?? false,
    },
  };
}
