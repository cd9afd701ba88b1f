import { CONTROLS, INVISIBLES } from './unsafe-characters.js';

/** Query parameter names that carry a key, compared after decoding and in lower case. */
const KEY_PARAMS = new Set(['apikey', 'api_key', 'key']);
const QUERY_PARAM = /([?&])([^&#=\s]*)(=)[^&#\s]*/g;

/** Whether a query parameter of this name carries a key, whatever its spelling (`api%4Bey`, `API_KEY`). */
export function isKeyParam(name: string): boolean {
  return KEY_PARAMS.has(decoded(name).toLowerCase());
}

/** Removes API keys carried in a URL's query string, whatever the spelling of the parameter's name (`api%4Bey`). */
export function redactUrl(url: string): string {
  if (!url.includes('=')) return url;
  return url.replace(QUERY_PARAM, (whole, separator: string, name: string, equals: string) =>
    isKeyParam(name) ? `${separator}${name}${equals}[redacted]` : whole,
  );
}

/**
 * Escapes that a server, a URL parser or a JSON parser turns back into the character: a key
 * written as `sp%5Fdemo…`, `sp%5fdemo…`, `sp%255Fdemo…` (encoded twice) or `sp\u005fdemo…`
 * is the key all the same.
 */
const ESCAPE = /%[0-9a-f]{2}|\\u[0-9a-f]{4}|\\[bfnrt]/i;
/** JSON's escapes of the controls a key may be split by (`\n` in a traced frame). */
const JSON_SHORT_ESCAPES: Readonly<Record<string, number>> = { b: 8, f: 12, n: 10, r: 13, t: 9 };
/** Decoding passes: encoded twice is seen in the wild (proxies, copied URLs); more is taken as meant. */
const MAX_DECODING_PASSES = 4;

/** A text with its escapes decoded, and where each decoded character came from in the original. */
interface DecodedView {
  text: string;
  /** Index in the original of the first character each decoded character was read from. */
  from: number[];
  /** Index in the original just past the last character each decoded character was read from. */
  to: number[];
}

function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** The value of `length` hex digits at `at`, or -1 (read by char code: this runs on every escape of a log line). */
function hexAt(text: string, at: number, length: number): number {
  let value = 0;
  for (let i = at; i < at + length; i += 1) {
    const digit = hexDigit(text.charCodeAt(i));
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

/**
 * The character a `%XX` escape at `at` starts and the escape's length: a whole UTF-8 sequence
 * (`%E2%80%8B` is U+200B) as one character, any other byte as the character of that number.
 */
function percentEncoded(text: string, at: number): [code: number, width: number] {
  const lead = hexAt(text, at + 1, 2);
  const continuations =
    lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : 0;
  if (continuations === 0) return [lead, 3];
  let code = lead & (0x3f >> continuations);
  for (let n = 1; n <= continuations; n += 1) {
    const byte = text[at + 3 * n] === '%' ? hexAt(text, at + 3 * n + 1, 2) : -1;
    if (byte < 0x80 || byte > 0xbf) return [lead, 3];
    code = code * 64 + (byte & 0x3f);
  }
  return code > 0x10ffff ? [lead, 3] : [code, 3 * (continuations + 1)];
}

function decodePass(view: DecodedView): DecodedView | undefined {
  const { text, from, to } = view;
  let out = '';
  const nextFrom: number[] = [];
  const nextTo: number[] = [];
  let changed = false;
  for (let i = 0; i < text.length;) {
    let code = -1;
    let width = 1;
    if (text[i] === '%') {
      [code, width] = percentEncoded(text, i);
    } else if (text[i] === '\\' && text[i + 1] === 'u') {
      code = hexAt(text, i + 2, 4);
      width = 6;
    } else if (text[i] === '\\') {
      code = JSON_SHORT_ESCAPES[text[i + 1] ?? ''] ?? -1;
      width = 2;
    }
    if (code === -1) {
      out += text[i];
      nextFrom.push(from[i]!);
      nextTo.push(to[i]!);
      i += 1;
      continue;
    }
    changed = true;
    const char = String.fromCodePoint(code);
    out += char;
    // An astral character is two code units, each read from the whole escape.
    for (let unit = 0; unit < char.length; unit += 1) {
      nextFrom.push(from[i]!);
      nextTo.push(to[i + width - 1]!);
    }
    i += width;
  }
  return changed ? { text: out, from: nextFrom, to: nextTo } : undefined;
}

/** The original view of `text`: each character from itself. */
function plainView(text: string): DecodedView {
  const from: number[] = [];
  const to: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    from.push(i);
    to.push(i + 1);
  }
  return { text, from, to };
}

/**
 * `text` decoded once, twice, … (up to a bound) while escapes remain, each view mapped back
 * to the original. Every one is a form the secret may be in: a secret that holds `%41`,
 * encoded once, is found in the first, not in the second.
 */
function decodedViews(text: string): DecodedView[] {
  const views: DecodedView[] = [];
  let view = plainView(text);
  for (let pass = 0; pass < MAX_DECODING_PASSES; pass += 1) {
    const next = decodePass(view);
    if (next === undefined) break;
    views.push(next);
    view = next;
  }
  return views;
}

/**
 * What can stand inside a key without hiding it from a reader: what the sanitizer takes out
 * or shows as a space (controls, bidi and zero-width characters), tabs and line breaks
 * included. A plain space is not: most lines have them, and a key is not found across them.
 */
const SPLITTER = new RegExp(`[\\t\\n${CONTROLS}${INVISIBLES}]`);

/**
 * `text` (read from the original at `from(i)` to `to(i)`) without the characters that can
 * split a key, mapped back to the original; undefined when it has none.
 */
function joinedView(text: string, from: (i: number) => number, to: (i: number) => number): DecodedView | undefined {
  if (!SPLITTER.test(text)) return undefined;
  let out = '';
  const nextFrom: number[] = [];
  const nextTo: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    if (SPLITTER.test(text[i]!)) continue;
    out += text[i];
    nextFrom.push(from(i));
    nextTo.push(to(i));
  }
  return { text: out, from: nextFrom, to: nextTo };
}

/**
 * Every form of `text` a secret may be found in besides the text itself, each mapped back to
 * it: decoded (once, twice, …), and each of those and the text with no character that can
 * split a key (`sp_de` + U+200B + `mo` is `sp_demo` to the reader).
 */
function views(text: string): DecodedView[] {
  const decodedForms = ESCAPE.test(text) ? decodedViews(text) : [];
  const joined = [
    joinedView(
      text,
      (i) => i,
      (i) => i + 1,
    ),
    ...decodedForms.map((view) =>
      joinedView(
        view.text,
        (i) => view.from[i]!,
        (i) => view.to[i]!,
      ),
    ),
  ];
  return [...decodedForms, ...joined.filter((view) => view !== undefined)];
}

/** `text` with every escape decoded (as often as it was applied, up to a bound). */
function decoded(text: string): string {
  return ESCAPE.test(text) ? (decodedViews(text).at(-1)?.text ?? text) : text;
}

/**
 * Makes a function that replaces every given secret in a text by `marker`, written as it is
 * or escaped (percent-encoded in any case, encoded twice, JSON `\u` escapes), or split by
 * characters a reader does not see as part of it (controls, line breaks, bidi and zero-width
 * characters). Secrets are
 * indexed by their first characters, so a text costs one map lookup per character whatever
 * the number of secrets; a text without escapes is scanned once.
 */
export function secretScrubber(secrets: Iterable<string>, marker: string): (text: string) => string {
  const list = [...new Set(secrets)].filter((secret) => secret.length > 0);
  if (list.length === 0) return (text) => text;
  const prefixLength = Math.min(8, ...list.map((secret) => secret.length));
  const byPrefix = new Map<string, string[]>();
  for (const secret of list) {
    const prefix = secret.slice(0, prefixLength);
    byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), secret]);
  }

  /** Where secrets are in `text`, as [start, end) pairs in order. */
  function find(text: string): [number, number][] {
    const found: [number, number][] = [];
    for (let i = 0; i + prefixLength <= text.length;) {
      // The longest match wins, so a key that extends another is hidden whole.
      let match = 0;
      for (const secret of byPrefix.get(text.slice(i, i + prefixLength)) ?? []) {
        if (secret.length > match && text.startsWith(secret, i)) match = secret.length;
      }
      if (match === 0) {
        i += 1;
        continue;
      }
      found.push([i, i + match]);
      i += match;
    }
    return found;
  }

  return (text) => {
    if (text.length < prefixLength) return text;
    const spans = find(text);
    const others = views(text);
    for (const view of others) {
      for (const [start, end] of find(view.text)) spans.push([view.from[start]!, view.to[end - 1]!]);
    }
    if (others.length > 0) spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    if (spans.length === 0) return text;
    let out = '';
    let copied = 0;
    for (const [start, end] of spans) {
      // Found in two views and overlapping: one secret, one marker.
      if (start >= copied) out += text.slice(copied, start) + marker;
      copied = Math.max(copied, end);
    }
    return out + text.slice(copied);
  };
}
