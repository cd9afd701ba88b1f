import { stripVTControlCharacters } from 'node:util';
import type { ChalkInstance } from 'chalk';
import { isPlainObject } from '../protocol/objects.js';
import { formatBodyText, markMatches, type TextView } from './body.js';
import { destinationAddress } from '../protocol/urls.js';
import { hyperlink } from './hyperlinks.js';
import { createChalk, streamColour } from './style.js';
import { momentText, oneLine } from './text.js';

export { supportsHyperlinks } from './hyperlinks.js';

type Fields = Record<string, unknown>;

/** A field meant as text; feeds of this family also send numbers there. Anything else counts as missing. */
function textField(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value;
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
}

function labelField(value: unknown): string | undefined {
  const text = textField(value);
  return text === undefined ? undefined : oneLine(text);
}

/** Epoch milliseconds; feeds of this family send milliseconds, seconds, numeric strings or ISO strings. */
function itemTime(value: unknown): number | undefined {
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (/^\d+(?:\.\d+)?$/.test(trimmed)) return itemTime(Number(trimmed));
    const parsed = Date.parse(trimmed);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  // 1e12 ms is September 2001; no news item of this family is older, so a smaller number is seconds.
  return value < 1e12 ? value * 1000 : value;
}

/** `coin`, `suggestions[].coin` and `symbols[]`, each once, upper-case, without a `$`. */
function coinTags(fields: Fields): string[] {
  const candidates: unknown[] = [fields['coin']];
  if (Array.isArray(fields['suggestions'])) {
    for (const suggestion of fields['suggestions'])
      candidates.push(isPlainObject(suggestion) ? suggestion['coin'] : undefined);
  }
  if (Array.isArray(fields['symbols'])) candidates.push(...fields['symbols']);
  const tags = new Set<string>();
  for (const candidate of candidates) {
    const tag = typeof candidate === 'string' ? oneLine(candidate)?.replace(/^\$/, '').toUpperCase() : undefined;
    if (tag) tags.add(tag);
  }
  return [...tags];
}

/** Small marks for tweets (`info` of Tree-of-Alpha-style feeds); anything else in `info` is ignored. */
function tweetMarks(info: unknown, color: boolean, c: ChalkInstance): string[] {
  if (!isPlainObject(info)) return [];
  const marks: [symbol: string, label: string][] = [];
  if (info['isRetweet'] === true) marks.push(['⟲', 'retweet']);
  if (info['isReply'] === true) marks.push(['↩', 'reply']);
  if (info['isQuote'] === true) {
    const user = labelField(info['quotedUser'])?.replace(/^@/, '');
    marks.push(['❝', user === undefined ? 'quote' : `quote of @${user}`]);
  }
  return marks.map(([symbol, label]) => (color ? c.dim(`${symbol} ${label}`) : `(${label})`));
}

function itemLink(fields: Fields): string | undefined {
  for (const value of [fields['link'], fields['url']]) {
    const url = typeof value === 'string' ? destinationAddress(value) : undefined;
    if (url !== undefined) return url;
  }
  return undefined;
}

/** The locked line of a hidden item: until when, as `listen` says it (the exact instant in plain output). */
function lockedLine(releaseMs: number | undefined, view: TextView, c: ChalkInstance): string {
  let until = 'release';
  if (releaseMs !== undefined) until = view.color ? momentText(releaseMs, view) : new Date(releaseMs).toISOString();
  return view.color ? c.yellow(`🔒 locked until ${until}`) : `[locked until ${until}]`;
}

/** Whether the body as shown already shows the address (a post that is only a URL, a link written out). */
function showsAddress(body: string | undefined, url: string): boolean {
  return body !== undefined && stripVTControlCharacters(body).replace(/\s+/g, '').includes(url);
}

function formatLink(url: string, view: TextView, c: ChalkInstance): string {
  if (!view.color || !view.hyperlinks) return c.blue.underline(url);
  // The full address is in the link; the visible text only has to say where it goes.
  const shown = url.replace(/^https?:\/\//i, '');
  return hyperlink(url, c.blue.underline(shown.length > 60 ? `${shown.slice(0, 59)}…` : shown));
}

/**
 * One tree item as a news terminal shows it: time, source badge and title, then
 * the body (or a locked line until the release time), the link unless the body shows it
 * already, and the coin tags; a release is marked and dated at its release. Items of other feeds
 * of the Tree of Alpha family render too (`en`, `url`, `symbols`, tweet `info`);
 * fields of the wrong type are treated as missing, so no item makes it throw.
 */
export function formatTreeItem(
  item: Record<string, unknown>,
  view: TextView,
  kind: 'created' | 'released' = 'created',
): string {
  const fields: Fields = isPlainObject(item) ? item : {};
  const c = createChalk(view.color);
  const source = labelField(fields['source']);
  const title = labelField(fields['title']) ?? labelField(fields['en']);

  const releaseMs = itemTime(fields['releaseAt']);
  // The re-send of a released item is news of the release: it is dated then.
  const shownMs = kind === 'released' && releaseMs !== undefined ? releaseMs : itemTime(fields['time']);
  const header = [c.dim(momentText(shownMs, view))];
  if (source !== undefined) {
    const colour = streamColour(labelField(fields['streamId']) ?? source);
    header.push(view.color ? c[colour].inverse(` ${source} `) : `[${source}]`);
  }
  // Our items repeat the stream name as title and source.
  if (title !== undefined && title !== source) header.push(c.bold(markMatches(title, view, c)));
  header.push(...tweetMarks(fields['info'], view.color, c));
  // The re-send of an item that was locked: say so, as listen does.
  if (kind === 'released') header.push(view.color ? c.green('🔓 released') : '[released]');
  const lines = [header.join(' ')];
  let shownBody: string | undefined;
  if (fields['hidden'] === true) {
    lines.push(lockedLine(releaseMs, view, c));
  } else {
    // Some feeds carry the English text in `en` only; it is the body when it is not the title.
    const english = textField(fields['en']);
    const body =
      textField(fields['body']) ?? (english !== undefined && oneLine(english) !== title ? english : undefined);
    if (body !== undefined) {
      shownBody = formatBodyText(body, fields['contentType'] === 'markdown', view, c);
      lines.push(shownBody);
    }
  }
  const link = itemLink(fields);
  if (link !== undefined && !showsAddress(shownBody, link)) lines.push(formatLink(link, view, c));
  const coins = coinTags(fields);
  if (coins.length > 0) lines.push(coins.map((coin) => c.yellow(`$${coin}`)).join(' '));
  return lines.join('\n');
}
