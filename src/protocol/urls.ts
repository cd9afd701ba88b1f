import { CONTROLS, INVISIBLES } from './unsafe-characters.js';

/**
 * Web addresses in plain text, found the way a reader of a news post would: the address of
 * `https://en.wikipedia.org/wiki/Bitcoin_(disambiguation).` keeps its parentheses and leaves
 * the full stop out. The service (a tree item's `link`) and every renderer (`tree`, `listen`,
 * `terminal`, through src/render/links.ts) find them here, so all agree on where one ends.
 */

const SCHEME = /https?:\/\//gi;
/**
 * What ends an address: whitespace, what the sanitizer takes out (a removed character is a
 * boundary, never a joint: `https://evil.example/` + BEL + `click` is not `…/click`), angle
 * brackets, straight and curly double quotes, guillemets and backticks, none of which a URL
 * holds unencoded.
 */
const ENDS = new RegExp(`[\\s${CONTROLS}${INVISIBLES}<>"\`\\u201C\\u201D\\u00AB\\u00BB]`);
/** Punctuation that ends a sentence or a markdown emphasis after an address, not part of it. */
const TRAILING = /[.,;:!?*_~'\u2018\u2019\u2026\u3001\u3002\uFF0C\uFF0E]$/;
/** Brackets kept only when the address opened them: `…/Bitcoin_(disambiguation)` but not `(see https://a.example)`. */
const CLOSERS: Readonly<Record<string, string>> = { ')': '(', ']': '[', '}': '{' };
/** An address must name a host after its scheme. */
const WITH_HOST = /^https?:\/\/[^/?#]/i;

export interface FoundAddress {
  url: string;
  /** Where it starts and ends in the text. */
  start: number;
  end: number;
}

function count(text: string, char: string): number {
  let found = 0;
  for (let at = text.indexOf(char); at !== -1; at = text.indexOf(char, at + 1)) found += 1;
  return found;
}

/** `candidate` without the punctuation and unbalanced closing brackets a sentence put after it. */
function trimmed(candidate: string): string {
  let url = candidate;
  for (;;) {
    const last = url.at(-1) ?? '';
    const opener = CLOSERS[last];
    if (TRAILING.test(last) || (opener !== undefined && count(url, last) > count(url, opener))) url = url.slice(0, -1);
    else return url;
  }
}

/** The text from `start` up to the first character that ends an address. */
function runAt(text: string, start: number): string {
  let end = start;
  while (end < text.length && !ENDS.test(text[end]!)) end += 1;
  return text.slice(start, end);
}

/** The address in text that starts at `start` (at its scheme), or undefined when there is none. */
export function addressAt(text: string, start: number): FoundAddress | undefined {
  const url = trimmed(runAt(text, start));
  return WITH_HOST.test(url) ? { url, start, end: start + url.length } : undefined;
}

/** Every web address in `text`, in order; at most `limit` of them. */
export function webAddresses(text: string, limit = Number.POSITIVE_INFINITY): FoundAddress[] {
  const found: FoundAddress[] = [];
  SCHEME.lastIndex = 0;
  for (let match = SCHEME.exec(text); match !== null && found.length < limit; match = SCHEME.exec(text)) {
    const address = addressAt(text, match.index);
    if (address === undefined) continue;
    found.push(address);
    SCHEME.lastIndex = address.end;
  }
  return found;
}

/** The first web address in `text`. */
export function firstLink(text: string): string | undefined {
  return webAddresses(text, 1)[0]?.url;
}

/**
 * A link's destination (a markdown link's, a feed's `link` field) as an address to open: up
 * to the first character that ends an address in text, so a control or invisible character
 * in it cannot join two parts into a page the reader was not shown. Undefined when what is
 * left is not a web address.
 */
export function destinationAddress(destination: string): string | undefined {
  // A `<…>` destination may hold spaces; a browser sends them encoded. The author wrote
  // where it ends: nothing after the address is taken for punctuation.
  const url = runAt(destination.trim().replaceAll(' ', '%20'), 0);
  return WITH_HOST.test(url) ? url : undefined;
}
