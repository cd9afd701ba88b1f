import { safeLine } from './text.js';

/** Which way a traced frame or request went: `>` to the service, `<` from it. */
export type TraceDirection = 'sent' | 'received';

/**
 * One line of `--trace`: the time since the command started, the direction, and the text as
 * it went over the wire. What the service sent is hostile until shown otherwise, so the line
 * passes the one sanitizer like every other line on stderr.
 */
export function formatTraceLine(elapsedMs: number, direction: TraceDirection, text: string): string {
  const seconds = (Math.max(0, elapsedMs) / 1000).toFixed(3);
  return `+${seconds}s ${direction === 'sent' ? '>' : '<'} ${safeLine(text)}\n`;
}
