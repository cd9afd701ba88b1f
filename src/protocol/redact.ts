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
const ESCAPE = /%[0-9a-f]{2}|\\u[0-9a-f]{4}/i;
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
      code = hexAt(text, i + 1, 2);
      width = 3;
    } else if (text[i] === '\\' && text[i + 1] === 'u') {
      code = hexAt(text, i + 2, 4);
      width = 6;
    }
    if (code === -1) {
      out += text[i];
      nextFrom.push(from[i]!);
      nextTo.push(to[i]!);
      i += 1;
      continue;
    }
    changed = true;
    out += String.fromCharCode(code);
    nextFrom.push(from[i]!);
    nextTo.push(to[i + width - 1]!);
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

/** `text` with every escape decoded (as often as it was applied, up to a bound). */
function decoded(text: string): string {
  return ESCAPE.test(text) ? (decodedViews(text).at(-1)?.text ?? text) : text;
}

/**
 * Makes a function that replaces every given secret in a text by `marker`, written as it is
 * or escaped (percent-encoded in any case, encoded twice, JSON `\u` escapes). Secrets are
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
    if (ESCAPE.test(text)) {
      for (const view of decodedViews(text)) {
        for (const [start, end] of find(view.text)) spans.push([view.from[start]!, view.to[end - 1]!]);
      }
      spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    }
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
