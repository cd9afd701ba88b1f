// Bytes from the terminal as keys: nothing here knows what a key does (bindings.ts does).
//
// Not `readline.emitKeypressEvents`: measured with `node bench/key-parser.mjs` (the same
// reads through both), Node's parser took 5.1 µs a read against 0.67 µs here (7.6× slower;
// 0.32 µs a key against 0.042), and it turns the terminal's late answer to the background
// question (OSC 11) into keys, where this parser drops it.

/** A key as read from the terminal, besides its text. */
export interface KeyPress {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  home?: boolean;
  end?: boolean;
  return?: boolean;
  escape?: boolean;
  ctrl?: boolean;
  backspace?: boolean;
  delete?: boolean;
}

// The final of a CSI or SS3 sequence (ESC [ 1 ; 5 A, ESC O A): the key, whatever the modifiers.
const SEQUENCE_KEYS: Record<string, KeyPress> = {
  A: { upArrow: true },
  B: { downArrow: true },
  H: { home: true },
  F: { end: true },
  '1~': { home: true },
  '7~': { home: true },
  '4~': { end: true },
  '8~': { end: true },
  '5~': { pageUp: true },
  '6~': { pageDown: true },
  '3~': { delete: true },
};
const CSI = /\u001B\[([0-?]*)[ -/]*([@-~])/y;

/**
 * A read cut before the end of a key's sequence (`ESC [`, `ESC [ 1 ;`, `ESC O`: over a slow
 * link a sequence can come in two reads) split into what can be taken now and the start
 * to keep for the next read. A lone ESC is the Escape key, taken at once.
 */
export function splitUnfinished(data: string): [whole: string, unfinished: string] {
  // An answer of the terminal's (OSC 11, the background colour) not yet ended is kept whole too.
  const match = /\u001B(?:\[[0-?]*[ -/]*|O|\][^\u0007\u001B]*\u001B?)$/.exec(data);
  return match === null ? [data, ''] : [data.slice(0, match.index), match[0]];
}

/**
 * What one read of the terminal brings, key by key. Keys typed fast, sent by a script or
 * pasted arrive together: each is taken in turn, so `m` then Enter is a mute and a close,
 * not nothing. A key the terminal sends as a sequence (arrows, Home, PgDn) is one key; one
 * not used here is none.
 */
export function parseKeys(data: string): [string, KeyPress][] {
  const keys: [string, KeyPress][] = [];
  for (let at = 0; at < data.length;) {
    const char = String.fromCodePoint(data.codePointAt(at)!);
    at += char.length;
    if (char === '\u001B') {
      const next = data[at];
      if (next === '[') {
        CSI.lastIndex = at - 1;
        const match = CSI.exec(data);
        if (match === null) {
          keys.push(['', { escape: true }]);
          continue;
        }
        at = CSI.lastIndex;
        const final = match[2]!;
        const key = SEQUENCE_KEYS[final === '~' ? `${match[1]!.split(';')[0]}~` : final];
        if (key !== undefined) keys.push(['', key]);
      } else if (next === ']') {
        // The terminal's answer to a question (the background colour) that came late: no key.
        const end = /\u0007|\u001B\\/g;
        end.lastIndex = at;
        at = end.exec(data) === null ? data.length : end.lastIndex;
      } else if (next === 'O' && at + 1 < data.length) {
        const key = SEQUENCE_KEYS[data[at + 1]!];
        at += 2;
        if (key !== undefined) keys.push(['', key]);
      } else keys.push(['', { escape: true }]);
    } else if (char === '\r' || char === '\n') keys.push(['', { return: true }]);
    else if (char === '\u007F' || char === '\b') keys.push(['', { backspace: true }]);
    else if (char.charCodeAt(0) < 0x20) {
      // Ctrl and a letter; tab and the other controls are no key here.
      const code = char.charCodeAt(0);
      if (code >= 1 && code <= 26 && char !== '\t') keys.push([String.fromCharCode(code + 96), { ctrl: true }]);
    } else keys.push([char, {}]);
  }
  return keys;
}
