// C0 controls except tab and newline, DEL and C1 controls: text from the network
// could otherwise move the cursor, retitle the terminal or forge hyperlinks.
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

/** Untrusted text made safe to print on a terminal; lines end with `\n`. */
export function terminalSafe(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL_CHARACTERS, '');
}

const pad = (value: number): string => String(value).padStart(2, '0');

/** Local wall-clock `HH:MM:SS`, or `--:--:--` when there is no such time. */
export function clockTime(epochMs: number | undefined): string {
  const date = new Date(epochMs ?? Number.NaN);
  if (Number.isNaN(date.getTime())) return '--:--:--';
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** Local `HH:MM:SS` when the moment falls on today's date, else `YYYY-MM-DD HH:MM:SS`. */
export function localMoment(epochMs: number, nowMs: number): string {
  const date = new Date(epochMs);
  const now = new Date(nowMs);
  const sameDay =
    date.getFullYear() === now.getFullYear() && date.getMonth() === now.getMonth() && date.getDate() === now.getDate();
  const time = clockTime(epochMs);
  return sameDay ? time : `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}

// Bidi overrides, embeddings, isolates and marks, and zero-width characters: in a
// header, an id or an error message they reorder or hide what the reader sees
// (a stream id that reads as another, a URL spelled backwards).
const INVISIBLE_CHARACTERS = /[\u061C\u200B-\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/g;

/**
 * The one sanitizer for untrusted text in a one-line place (a header, a badge, an
 * id, a status line, an error message): no control, bidi or zero-width
 * characters, whitespace runs (newlines included) as one space.
 */
export function safeLine(text: string): string {
  return terminalSafe(text).replace(INVISIBLE_CHARACTERS, '').replace(/\s+/g, ' ').trim();
}

/** `safeLine`, or undefined when nothing is left to show. */
export function oneLine(text: string): string | undefined {
  const line = safeLine(text);
  return line === '' ? undefined : line;
}

/** Untrusted text over several lines (a stack trace): as `safeLine`, line breaks kept. */
export function safeLines(text: string): string {
  return terminalSafe(text).replace(INVISIBLE_CHARACTERS, '');
}
