/**
 * Every character the sanitizer takes out of text from the network, one string each: C0
 * controls (tab and newline too), DEL, C1 controls, bidi controls and marks, and
 * zero-width characters.
 */
export const UNSAFE_CHARACTERS: readonly string[] = [
  ...Array.from({ length: 0x20 }, (_, code) => code),
  ...Array.from({ length: 0x21 }, (_, code) => 0x7f + code),
  0x061c,
  ...Array.from({ length: 5 }, (_, code) => 0x200b + code),
  ...Array.from({ length: 5 }, (_, code) => 0x202a + code),
  0x2060,
  ...Array.from({ length: 4 }, (_, code) => 0x2066 + code),
  0xfeff,
].map((code) => String.fromCharCode(code));

/** `U+200B`: a character named in a test's title. */
export const codePoint = (char: string): string =>
  `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
