import { stripVTControlCharacters } from 'node:util';
import wrapAnsi from 'wrap-ansi';

// What a wrapped line's continuation is indented under: leading spaces, then a list
// bullet or number (as marked-terminal draws them) when there is one.
const HANGING_INDENT = /^ *(?:(?:[-*+•]|\d{1,9}[.)]) +)?/;
// Spaces the break leaves at the end of a row or the start of the next, beside any style codes.
const TRAILING_SPACES = / +((?:\u001B\[[0-9;]*m)*)$/;
const LEADING_SPACES = /^((?:\u001B\[[0-9;]*m)*) +/;
const SGR = /\u001B\[([0-9;]*)m/g;
// wrap-ansi's cost grows with the square of a line's length and of its style and link
// codes (a 64 KiB line of links took over a minute). A line longer than this or with more
// codes, and everything after this many characters of one text, is left for the terminal to fold.
const WRAP_LINE_LIMIT = 8_000;
const WRAP_LINE_CODES = 200;
const WRAP_TEXT_LIMIT = 32_000;
const ESCAPE = /\u001B/g;
// Style codes and hyperlinks (OSC 8), as styled output holds them.
const CODES = /\u001B\[[0-9;]*m|\u001B\]8;[^\u0007]*\u0007/g;

/** Which SGR parameter ends which: a closing code, and the opening codes it ends. */
function closes(closer: number, opener: number): boolean {
  switch (closer) {
    case 0:
      return true;
    case 22:
      return opener === 1 || opener === 2;
    case 39:
      return (opener >= 30 && opener <= 38) || (opener >= 90 && opener <= 97);
    case 49:
      return (opener >= 40 && opener <= 48) || (opener >= 100 && opener <= 107);
    default:
      return closer >= 23 && closer <= 29 && opener === closer - 20;
  }
}

/** The first parameter of an SGR code's parameters (`1;31` → 1; empty → 0). */
function firstParameter(parameters: string): number {
  const end = parameters.indexOf(';');
  return Number((end === -1 ? parameters : parameters.slice(0, end)) || 0);
}

/** The styles still open after `row`, given those open before it, as their codes. */
function stylesAfter(open: string[], row: string): string[] {
  let styles = open;
  SGR.lastIndex = 0;
  for (let match = SGR.exec(row); match !== null; match = SGR.exec(row)) {
    const number = firstParameter(match[1]!);
    const ending = number === 0 || number === 22 || number === 39 || number === 49 || (number >= 23 && number <= 29);
    if (ending) {
      if (styles.length > 0) styles = styles.filter((opened) => !closes(number, firstParameter(opened.slice(2, -1))));
    } else if (!styles.includes(match[0])) styles = [...styles, match[0]];
  }
  return styles;
}

const NONE: ReadonlySet<number> = new Set();

/** Ends a line cut at the width (code, which wrapping would change). */
export const CUT_MARK = '…';

// Printable Latin characters (and combining marks, which take none): at most one column each.
const ONE_COLUMN_EACH = /^[\u0020-\u007E\u00A0-\u036F]*$/;

// One code, or one character (a surrogate pair whole).
const CODE_OR_CHARACTER = /\u001B\[[0-9;]*m|\u001B\]8;[^\u0007]*\u0007|[\s\S]/gu;

/** The start of a styled line up to `count` characters shown, its codes kept whole. */
function firstCharacters(line: string, count: number): string {
  CODE_OR_CHARACTER.lastIndex = 0;
  let shown = 0;
  for (let match = CODE_OR_CHARACTER.exec(line); match !== null; match = CODE_OR_CHARACTER.exec(line)) {
    if (match[0].length === 1 || !match[0].startsWith('\u001B')) shown += 1;
    if (shown > count) return line.slice(0, match.index);
  }
  return line;
}

/**
 * A line (styled or not) that must not be wrapped, such as a line of code: as it is when it
 * fits, else its first `width - 1` columns and CUT_MARK. Only its start is measured, so a
 * line of any length costs about the width.
 */
export function cutToWidth(line: string, width: number): string {
  // Most lines of code are short and Latin: one column a character, nothing to measure.
  if (line.length <= width * 4) {
    const plain = line.includes('\u001B') ? stripVTControlCharacters(line) : line;
    if (plain.length <= width && ONE_COLUMN_EACH.test(plain)) return line;
  }
  // A character takes one column or two: twice the width in characters is more than a row.
  const head = firstCharacters(line, width * 2 + 1);
  const rows = (columns: number) => wrapAnsi(head, columns, { hard: true, wordWrap: false, trim: false }).split('\n');
  if (head.length === line.length && rows(width).length === 1) return line;
  const [kept, ...cut] = rows(Math.max(1, width - 1));
  // The codes of the part cut off still apply: the styles that line closed are closed.
  const after = `${cut.join('')}${line.slice(head.length)}`.match(CODES)?.join('') ?? '';
  return `${kept!}${CUT_MARK}${after}`;
}

/**
 * Text (styled or not) wrapped to `width` columns at word boundaries, each line on its
 * own: a paragraph, a list item or a quoted line continues under its own indent, in its
 * own style. A word longer than the line is left whole (a URL broken in two would no
 * longer be one); the terminal folds it, as it does a line past WRAP_LINE_LIMIT characters or
 * WRAP_LINE_CODES codes and the lines after WRAP_TEXT_LIMIT characters (wrapping them would take too long).
 * The lines numbered in `verbatim` (code) are never wrapped: cut at the width (cutToWidth).
 */
export function wrapToWidth(text: string, width: number, verbatim: ReadonlySet<number> = NONE): string {
  let open: string[] = [];
  let wrapped = 0;
  return text
    .split('\n')
    .map((line, index) => {
      if (verbatim.has(index)) {
        const cut = cutToWidth(line, width);
        open = stylesAfter(open, cut);
        return cut;
      }
      // Most lines are short: no need to strip their codes to know they fit.
      if (line.length <= width) {
        if (line.includes('\u001B')) open = stylesAfter(open, line);
        return line;
      }
      const plain = stripVTControlCharacters(line);
      if (
        plain.length <= width ||
        line.length > WRAP_LINE_LIMIT ||
        wrapped > WRAP_TEXT_LIMIT ||
        (line.match(ESCAPE)?.length ?? 0) > WRAP_LINE_CODES
      ) {
        open = stylesAfter(open, line);
        return line;
      }
      wrapped += line.length;
      const prefix = HANGING_INDENT.exec(plain)?.[0] ?? '';
      const indent = Math.min(prefix.length, Math.floor(width / 2));
      // An unstyled indent is kept as it is and the text after it wrapped; a styled one (a
      // quote) is wrapped with its text, its first row a little shorter than it could be.
      const lead = indent === prefix.length && line.startsWith(prefix) ? prefix : '';
      // Trimming would take a styled indent away too.
      const trim = lead !== '' || indent === 0;
      return wrapAnsi(line.slice(lead.length), width - indent, { hard: false, trim })
        .split('\n')
        .map((row, index) => {
          const shown =
            index === 0
              ? `${lead}${row.replace(TRAILING_SPACES, '$1')}`
              : `${' '.repeat(indent)}${open.join('')}${row.replace(LEADING_SPACES, '$1').replace(TRAILING_SPACES, '$1')}`;
          open = stylesAfter(open, row);
          return shown;
        })
        .join('\n');
    })
    .join('\n');
}
