import { stripVTControlCharacters } from 'node:util';
import { hyperlink, isWebUrl } from './hyperlinks.js';
import { createChalk } from './style.js';
import { terminalSafe } from './text.js';

export interface MarkdownOptions {
  color: boolean;
  /** Columns for horizontal rules; paragraphs are left to the terminal to wrap. */
  width: number;
  /** Render links as OSC 8 hyperlinks (only with colour; see `supportsHyperlinks`). */
  hyperlinks?: boolean;
}

const unstyled = (text: string): string => text;

/**
 * Loads marked and marked-terminal (kept out of start-up: only `tree` and
 * `listen` with markdown posts need them) and returns a renderer for a terminal.
 */
export async function loadMarkdownRenderer(options: MarkdownOptions): Promise<(markdown: string) => string> {
  const { color, width } = options;
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be a positive integer, got ${width}`);
  const [{ Marked }, { markedTerminal }] = await Promise.all([import('marked'), import('marked-terminal')]);
  const c = createChalk(color);
  const hyperlinks = color && options.hyperlinks === true;

  const marked = new Marked(
    // marked-terminal's default styles use the global chalk, which ignores our colour decision.
    markedTerminal({
      code: c.yellow,
      blockquote: c.gray.italic,
      html: c.gray,
      heading: c.green.bold,
      firstHeading: c.magenta.bold,
      listitem: unstyled,
      table: unstyled,
      paragraph: unstyled,
      strong: c.bold,
      em: c.italic,
      codespan: c.yellow,
      del: c.dim.strikethrough,
      tab: 2,
      // cli-table3 heads tables in red, which reads as an error.
      tableOptions: { style: { head: ['bold'] } },
    }),
    {
      renderer: {
        // marked-terminal prints the source of a tight list item's text, so
        // `- **a**` would keep its asterisks; render its inline tokens instead.
        text(token) {
          return 'tokens' in token && token.tokens ? this.parser.parseInline(token.tokens) : false;
        },
        // marked-terminal decides on hyperlinks from process.stdout at import time.
        link(token) {
          const text = this.parser.parseInline(token.tokens);
          const href = terminalSafe(token.href);
          if (hyperlinks && isWebUrl(href)) return hyperlink(href, c.blue.underline(text));
          const url = c.blue.underline(href);
          return stripVTControlCharacters(text) === href ? url : `${c.blue(text)} (${url})`;
        },
        // marked-terminal sizes rules from process.stdout, which is not the output when piped.
        hr() {
          return `${c.dim('-'.repeat(width))}\n\n`;
        },
      },
    },
  );

  return (markdown) => {
    const rendered = marked.parse(markdown, { async: false }).replace(/\s+$/, '');
    // Code blocks and tables are coloured by cli-highlight and cli-table3, which
    // follow their own colour detection; without colour nothing may get through.
    return color ? rendered : stripVTControlCharacters(rendered);
  };
}
