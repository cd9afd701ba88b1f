// JSON.stringify escapes C0 controls but writes these as they are: C1 controls
// (0x9B is CSI on many terminals), the line and paragraph separators (line breaks
// to some readers), bidi and zero-width characters. Escaped, a consumer that
// parses the line gets the same text; one that prints it raw is not steered.
const UNSAFE_IN_JSON = /[\u0080-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060\u2066-\u2069\uFEFF]/g;
const HAS_UNSAFE = new RegExp(UNSAFE_IN_JSON.source);

const escape = (character: string): string => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A value as one line of JSON that is safe to print on a terminal (no newline at the end). */
export function jsonLine(value: unknown): string {
  const text = JSON.stringify(value);
  // Most lines have nothing to escape: one scan, and no new string.
  return HAS_UNSAFE.test(text) ? text.replace(UNSAFE_IN_JSON, escape) : text;
}
