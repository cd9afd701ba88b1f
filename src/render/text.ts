import { CONTROLS, INVISIBLES } from '../protocol/unsafe-characters.js';

const CONTROL_CHARACTERS = new RegExp(`[${CONTROLS}]`, 'g');
const INVISIBLE_CHARACTERS = new RegExp(`[${INVISIBLES}]`, 'g');

/**
 * Untrusted text made safe to print on a terminal; lines end with `\n`. A control character
 * becomes a space: taken out, it would join the text around it into words (or an address)
 * that the sender never wrote.
 */
export function terminalSafe(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL_CHARACTERS, ' ');
}

const pad = (value: number, digits = 2): string => String(value).padStart(digits, '0');

/** Which clock times are shown on: the reader's local time (default) or UTC, and what "today" is. */
export interface TimeView {
  /** The clock for "today", in epoch ms (tests drive it); default Date.now. */
  now?: () => number;
  utc?: boolean;
}

function calendar(date: Date, utc: boolean): [year: number, month: number, day: number] {
  return utc
    ? [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()]
    : [date.getFullYear(), date.getMonth() + 1, date.getDate()];
}

/**
 * `HH:MM:SS` when the moment falls on today's date, else `YYYY-MM-DD HH:MM:SS`: local
 * time, or UTC with ` UTC` after it. `--:--:--` when there is no such time.
 */
export function momentText(epochMs: number | undefined, view: TimeView = {}): string {
  const date = new Date(epochMs ?? Number.NaN);
  if (Number.isNaN(date.getTime())) return '--:--:--';
  const utc = view.utc === true;
  const time = utc
    ? `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`
    : `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  const [year, month, day] = calendar(date, utc);
  const today = calendar(new Date((view.now ?? Date.now)()), utc);
  const sameDay = year === today[0] && month === today[1] && day === today[2];
  const shown = sameDay ? time : `${pad(year, 4)}-${pad(month)}-${pad(day)} ${time}`;
  return utc ? `${shown} UTC` : shown;
}

/**
 * The one sanitizer for untrusted text in a one-line place (a header, a badge, an
 * id, a status line, an error message): no control, bidi or zero-width characters (in
 * a header, an id or an error message they reorder or hide what the reader sees), each
 * a space instead, and whitespace runs (newlines included) as one space.
 */
export function safeLine(text: string): string {
  return terminalSafe(text).replace(INVISIBLE_CHARACTERS, ' ').replace(/\s+/g, ' ').trim();
}

/** `safeLine`, or undefined when nothing is left to show. */
export function oneLine(text: string): string | undefined {
  const line = safeLine(text);
  return line === '' ? undefined : line;
}

/** Untrusted text over several lines (a stack trace): as `safeLine`, line breaks kept. */
export function safeLines(text: string): string {
  return terminalSafe(text).replace(INVISIBLE_CHARACTERS, ' ');
}
