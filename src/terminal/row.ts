import stringWidth from 'string-width';
import type { ChalkInstance } from 'chalk';
import { createChalk, streamColour } from '../render/style.js';
import { momentText } from '../render/text.js';
import type { AlertRule } from './alerts.js';
import type { Entry } from './entry.js';
import { highlightMarks, tagStyle, type Marks, type Theme } from './theme.js';

/**
 * Columns plain text takes, counted per code point as terminals and tmux draw it: an emoji
 * with a skin tone is two emoji there, where a grapheme count would say one and the line
 * would wrap and scroll the screen. Over-counting leaves a blank at worst.
 */
export function cells(text: string): number {
  let width = 0;
  for (const point of text) width += point.charCodeAt(0) < 0x7f && point.length === 1 ? 1 : pointWidth(point);
  return width;
}

const pointWidths = new Map<string, number>();

/** string-width of one code point, remembered: a screen has few distinct ones, and each frame asks again. */
function pointWidth(point: string): number {
  let width = pointWidths.get(point);
  if (width === undefined) {
    width = stringWidth(point);
    // Bounded: a post of many distinct characters must not grow this for ever.
    if (pointWidths.size < 4096) pointWidths.set(point, width);
  }
  return width;
}

/** The longest start of plain text that fits in `width` columns, with `…` when cut. */
export function fitText(text: string, width: number): string {
  if (width <= 0) return '';
  if (cells(text) <= width) return text;
  let shown = '';
  let used = 0;
  for (const point of text) {
    const size = cells(point);
    if (used + size > width - 1) break;
    shown += point;
    used += size;
  }
  return `${shown}…`;
}

// An escape sequence our own renderers write: SGR (CSI … m and the other CSI forms) and
// OSC 8 hyperlinks (ended by BEL or ST). Network text never carries one: the sanitizer
// took them out before anything was rendered.
const ESCAPE = /\u001B(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001B]*(?:\u0007|\u001B\\)|[@-Z\\-_])/y;

/** Where the escape sequence that starts at `at` ends, or undefined when none starts there. */
function escapeEnd(line: string, at: number): number | undefined {
  if (line.charCodeAt(at) !== 0x1b) return undefined;
  ESCAPE.lastIndex = at;
  return ESCAPE.test(line) ? ESCAPE.lastIndex : undefined;
}

/** Columns a styled line takes: its escape sequences take none. */
export function lineCells(line: string): number {
  if (!line.includes('\u001B')) return cells(line);
  let width = 0;
  for (let at = 0; at < line.length;) {
    const end = escapeEnd(line, at);
    if (end !== undefined) {
      at = end;
      continue;
    }
    const point = String.fromCodePoint(line.codePointAt(at)!);
    width += cells(point);
    at += point.length;
  }
  return width;
}

/**
 * A styled line cut to `width` columns, with `…` when cut: its escape sequences are kept
 * and, when cut, its colours and any hyperlink left open are ended, so nothing leaks into
 * the next line. A line that fits comes back as it is.
 */
export function fitLine(line: string, width: number): string {
  if (!line.includes('\u001B')) return fitText(line.replace(/\t/g, '    '), width);
  const plain = line.replace(/\t/g, '    ');
  if (lineCells(plain) <= width) return plain;
  let shown = '';
  let used = 0;
  let linkOpen = false;
  for (let at = 0; at < plain.length;) {
    const end = escapeEnd(plain, at);
    if (end !== undefined) {
      const sequence = plain.slice(at, end);
      if (sequence.startsWith('\u001B]8;')) linkOpen = !/^\u001B\]8;[^;]*;(?:\u0007|\u001B\\)$/.test(sequence);
      shown += sequence;
      at = end;
      continue;
    }
    const point = String.fromCodePoint(plain.codePointAt(at)!);
    const size = cells(point);
    if (used + size > width - 1) break;
    shown += point;
    used += size;
    at += point.length;
  }
  return `${shown}…${linkOpen ? '\u001B]8;;\u0007' : ''}\u001B[0m`;
}

/**
 * A styled line folded into rows of at most `width` columns, for a line too long for a
 * word wrap: each row ends its styles, and the next opens again the styles before it.
 */
export function foldLine(line: string, width: number): string[] {
  const rows: string[] = [];
  let row = '';
  let used = 0;
  // The SGR codes since the last reset: what a row continues in.
  let open = '';
  for (let at = 0; at < line.length;) {
    const end = escapeEnd(line, at);
    if (end !== undefined) {
      const sequence = line.slice(at, end);
      if (/^\u001B\[0?m$/.test(sequence)) open = '';
      else if (sequence.endsWith('m') && sequence.startsWith('\u001B[')) open += sequence;
      row += sequence;
      at = end;
      continue;
    }
    const point = String.fromCodePoint(line.codePointAt(at)!);
    const size = cells(point);
    if (used + size > width && used > 0) {
      rows.push(`${row}\u001B[0m`);
      row = open;
      used = 0;
    }
    row += point;
    used += size;
    at += point.length;
  }
  rows.push(row);
  return rows;
}

// A match is bold and underlined: neither is used by the rows' colours, and both read on any background.
const SEARCH_MARKS: Marks = { open: '\u001B[1;4m', close: '\u001B[22;24m' };

/**
 * A line, plain or styled, with what `pattern` matches in its text marked (bold and
 * underlined, or `marks`); its own escape sequences are left whole and take no part in the match.
 */
export function markMatches(
  line: string,
  pattern: RegExp | undefined,
  color: boolean,
  marks: Marks = SEARCH_MARKS,
): string {
  if (pattern === undefined || !color) return line;
  let plain = '';
  // Where each code unit of the plain text is in the line.
  const at: number[] = [];
  for (let index = 0; index < line.length;) {
    const end = escapeEnd(line, index);
    if (end !== undefined) {
      index = end;
      continue;
    }
    plain += line[index];
    at.push(index);
    index += 1;
  }
  let marked = '';
  let from = 0;
  for (const match of plain.matchAll(new RegExp(pattern.source, `${pattern.flags}g`))) {
    if (match[0] === '') continue;
    const start = at[match.index]!;
    const end = at[match.index + match[0].length - 1]! + 1;
    marked += `${line.slice(from, start)}${marks.open}${line.slice(start, end)}${marks.close}`;
    from = end;
  }
  return from === 0 ? line : marked + line.slice(from);
}

/** Plain text padded with spaces to exactly `width` columns. */
export function padText(text: string, width: number): string {
  const fitted = fitText(text, width);
  return fitted + ' '.repeat(Math.max(0, width - cells(fitted)));
}

export interface RowView {
  width: number;
  color: boolean;
  utc: boolean;
  selected: boolean;
  /** Now, in epoch ms: given only to rows that show time passing (a hidden post's countdown). */
  now: number | undefined;
  /** The row matched an alert rule; `highlight` colours the whole row. */
  alert: 'mark' | 'highlight' | undefined;
  /** A highlight rule with a colour: what it matched is coloured, not the row. */
  highlight?: AlertRule | undefined;
  pinned: boolean;
  /** Released in this session and not yet seen (the model says how long that lasts). */
  released: boolean;
  /** The search in effect: its matches in the headline are marked. */
  search: RegExp | undefined;
  /** Columns for the stream name. */
  streamWidth: number;
  theme: Theme;
  /** How long ago the post was made or released (`3s`, `2m`); none for a hidden one. */
  age: string | undefined;
}

const chalks = new Map<boolean, ChalkInstance>();

/** One chalk per colour choice for the whole screen: making one per row costs more than the row. */
export function screenChalk(color: boolean): ChalkInstance {
  let chalk = chalks.get(color);
  if (chalk === undefined) {
    chalk = createChalk(color);
    chalks.set(color, chalk);
  }
  return chalk;
}

/** `1:05`, `12:00:07`: a countdown that never shows a negative. */
export function countdown(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/**
 * The marks, a column each so one never hides another: pinned `^`, matched by an alert rule
 * `!`, then released just now `*` or history `·`.
 */
function marksOf(entry: Entry, view: RowView): string {
  const state = view.released ? '*' : entry.history ? '·' : ' ';
  return `${view.pinned ? '^' : ' '}${view.alert !== undefined ? '!' : ' '}${state}`;
}

/** Columns a row gives the post's source at most, after the stream's name. */
const MAX_SOURCE_COLUMNS = 16;

/**
 * One post as one line of exactly `view.width` columns: selection and marks, time, stream,
 * headline, coin tags, link count, and a lock with its countdown for a hidden post.
 */
export function formatRow(entry: Entry, view: RowView): string {
  const c = screenChalk(view.color);
  const time = momentText(entry.text === null ? entry.createdMs : (entry.releaseMs ?? entry.createdMs), {
    utc: view.utc,
  }).replace(/ UTC$/, 'Z');
  const stream = padText(entry.streamName, view.streamWidth);
  // A narrow row (a column of `c`) keeps its room for the headline.
  const sourceWidth = Math.min(MAX_SOURCE_COLUMNS, Math.floor(view.width / 8));
  const source = entry.source === undefined || sourceWidth < 6 ? '' : `${fitText(entry.source, sourceWidth)} `;
  const tail: string[] = [];
  if (entry.text === null) {
    const left = entry.releaseMs === undefined || view.now === undefined ? undefined : entry.releaseMs - view.now;
    tail.push(`🔒 ${left === undefined ? 'hidden' : countdown(left)}`);
  } else {
    if (view.released) tail.push('🔓 released');
    if (entry.coins.length > 0)
      tail.push(
        entry.coins
          .slice(0, 3)
          .map((coin) => `$${coin}`)
          .join(' '),
      );
    if (entry.links.length > 0) tail.push(`🔗${entry.links.length}`);
  }
  const right = tail.join('  ');
  const lead = `${view.selected ? '›' : ' '}${marksOf(entry, view)} ${time} ${(view.age ?? '').padStart(3)} `;
  const fixed = cells(lead) + view.streamWidth + 1 + cells(source) + (right === '' ? 0 : cells(right) + 2);
  const headlineWidth = view.width - fixed;
  const headline = padText(entry.text === null ? 'hidden until its release' : entry.headline, headlineWidth);
  if (fixed > view.width) return padText(`${lead}${entry.streamName} ${right}`, view.width);
  const rule = view.highlight;
  const marks = rule?.color === undefined ? undefined : highlightMarks(c, rule.color);
  const marked = (text: string, field: 'text' | 'stream') =>
    marks !== undefined && rule!.field === field ? markMatches(text, rule!.pattern, view.color, marks) : text;
  const styledHeadline =
    entry.text === null ? c.dim(headline) : markMatches(marked(headline, 'text'), view.search, view.color);
  // A highlighted row is black on yellow: its name and tags take its colours, never yellow on yellow.
  const highlighted = view.alert === 'highlight' && marks === undefined && !view.selected;
  const name = highlighted ? c.bold : c[view.theme.stream(streamColour(entry.streamId))].bold;
  const tags = tagStyle(c, view.theme, highlighted);
  const line = `${c.dim(lead)}${marked(name(stream), 'stream')} ${c.italic(source)}${styledHeadline}${right === '' ? '' : `  ${tags(right)}`}`;
  if (view.selected) return c.inverse(line);
  return highlighted ? c.bgYellow.black(line) : line;
}
