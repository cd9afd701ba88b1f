/**
 * Markdown shapes that marked and marked-terminal cannot render in bounded time
 * or stack, found by a linear scan before they are tried. Measured (bench/render.mjs):
 * nested blockquotes cost the cube of their depth (500 levels: 1.3 s; 2,000: a
 * stack overflow) and a table's drawing cannot be interrupted (~35 µs a cell).
 */
export const MAX_NESTING = 16;
export const MAX_TABLE_PIPES = 400;

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
// One container opener: a blockquote marker, or a bullet or ordered list marker before a space.
const CONTAINER = /^(?:>|(?:[*+-]|\d{1,9}[.)])(?=[ \t]|$))[ \t]*/;

function indentColumns(line: string): number {
  let columns = 0;
  for (const character of line) {
    if (character === ' ') columns += 1;
    else if (character === '\t') columns += 4 - (columns % 4);
    else break;
  }
  return columns;
}

/** How many containers a line opens at most: its markers, and two columns of indent per list level. */
function nestingOf(line: string): number {
  let rest = line.trimStart();
  let depth = Math.floor(indentColumns(line) / 2);
  for (let match = CONTAINER.exec(rest); match !== null && match[0] !== ''; match = CONTAINER.exec(rest)) {
    depth += 1;
    rest = rest.slice(match[0].length);
  }
  return depth;
}

/** Why the text should be shown as plain text, or undefined when it is safe to render. */
export function markdownRisk(markdown: string): string | undefined {
  let fence: string | undefined;
  let pipes = 0;
  for (const line of markdown.split('\n')) {
    const opener = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      continue;
    }
    if (opener !== undefined) {
      fence = opener;
      continue;
    }
    if (nestingOf(line) > MAX_NESTING) return 'too deeply nested to render';
    for (let at = line.indexOf('|'); at !== -1; at = line.indexOf('|', at + 1)) pipes += 1;
    if (pipes > MAX_TABLE_PIPES) return 'too many table cells to render';
  }
  return undefined;
}
