import type { ChalkInstance } from 'chalk';
import { webAddresses } from '../protocol/urls.js';
import { hyperlink } from './hyperlinks.js';
import { terminalSafe, type TimeView } from './text.js';
import { wrapToWidth } from './wrap.js';

/** How text is shown: what `listen` and `tree` share. */
export interface TextView extends TimeView {
  color: boolean;
  /** OSC 8 links; only with colour. */
  hyperlinks: boolean;
  /** Renders markdown for the terminal (see `loadMarkdownRenderer`); used whenever given (a terminal, or colour). */
  markdown?: (text: string) => string;
  /** Matches are highlighted; only with colour, so plain output stays as sent. */
  match?: RegExp;
  /** The terminal's columns: text is wrapped at word boundaries to fit. Undefined: as sent. */
  width?: number;
}

// SGR and OSC (hyperlink) sequences already in a rendered text.
const ESCAPE_SEQUENCE = /(\u001B\[[0-?]*[ -/]*[@-~]|\u001B\][^\u0007\u001B]*(?:\u0007|\u001B\\))/;

/**
 * Marks every match of `view.match` in text that may already be styled. Escape
 * sequences are skipped so a pattern never matches (and breaks) one; inverse
 * is used because its reset code touches no other style around it.
 */
export function markMatches(text: string, view: TextView, c: ChalkInstance): string {
  if (!view.color || view.match === undefined) return text;
  const global = new RegExp(view.match.source, `${view.match.flags.replace(/[gy]/g, '')}g`);
  return text
    .split(ESCAPE_SEQUENCE)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(global, (found) => c.inverse(found))))
    .join('');
}

/**
 * The text of a post or tree item: markdown rendered when there is a renderer, wrapped
 * to the width when there is one, highlighted and linked with colour; else as sent.
 */
export function formatBodyText(text: string, markdown: boolean, view: TextView, c: ChalkInstance): string {
  const safe = terminalSafe(text).trimEnd();
  if (markdown && view.markdown) return markMatches(view.markdown(safe), view, c);
  const shown = view.color ? linkedText(safe, view, c) : safe;
  return view.width === undefined ? shown : wrapToWidth(shown, view.width);
}

function linkedText(safe: string, view: TextView, c: ChalkInstance): string {
  if (!view.hyperlinks) return markMatches(safe, view, c);
  // A URL the terminal wraps over two lines is no longer detected; a hyperlink still is.
  // An address ends at a bidi or zero-width character: none is inside one.
  let shown = '';
  let copied = 0;
  for (const { url, start, end } of webAddresses(safe)) {
    shown += markMatches(safe.slice(copied, start), view, c) + hyperlink(url, markMatches(url, view, c));
    copied = end;
  }
  return shown + markMatches(safe.slice(copied), view, c);
}
