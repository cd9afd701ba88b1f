import { Chalk, type ChalkInstance } from 'chalk';

/**
 * A chalk that colours exactly when the caller says so. The CLI has already
 * weighed `--no-color`, `NO_COLOR`, `FORCE_COLOR` and the TTY; chalk's own
 * detection would second-guess it. Level 1 suffices: only the 16 basic
 * colours are used, and every colour terminal has them.
 */
export function createChalk(color: boolean): ChalkInstance {
  return new Chalk({ level: color ? 1 : 0 });
}

// Readable on dark and light backgrounds; red is left out, it reads as an error.
const STREAM_COLOURS = ['cyan', 'green', 'yellow', 'magenta', 'blueBright', 'redBright'] as const;
export type StreamColour = (typeof STREAM_COLOURS)[number];

/** The same stream gets the same colour in every run, so a reader learns it. */
export function streamColour(streamId: string): StreamColour {
  // FNV-1a: tiny, and spreads short similar ids (ULIDs) well.
  let hash = 0x811c9dc5;
  for (let index = 0; index < streamId.length; index++) {
    hash ^= streamId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return STREAM_COLOURS[(hash >>> 0) % STREAM_COLOURS.length]!;
}
