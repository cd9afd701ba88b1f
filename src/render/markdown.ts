import { stripVTControlCharacters } from 'node:util';
import type { Token } from 'marked';
import { markedBudget, OverBudget } from './budget.js';
import { onlyStyling } from './escapes.js';
import { destinationAddress } from '../protocol/urls.js';
import { hyperlink } from './hyperlinks.js';
import { claimsOtherTarget } from './link-claims.js';
import { markdownRisk } from './markdown-guard.js';
import { createChalk } from './style.js';
import { drawTable } from './table.js';
import { safeLine, terminalSafe } from './text.js';
import { wrapToWidth } from './wrap.js';

export interface MarkdownOptions {
  color: boolean;
  /** The terminal's columns: text wraps at word boundaries to fit, tables fit or become records. */
  width: number;
  /** Render links as OSC 8 hyperlinks (only with colour; see `supportsHyperlinks`). */
  hyperlinks?: boolean;
  /** The links' colour (default blue); a view that knows its background is dark takes bright blue. */
  linkColour?: 'blue' | 'blueBright';
  /** Most time one text may take to render before it is shown as plain text instead. */
  budgetMs?: number;
  /** The clock the budget is measured on, in ms (tests drive it); default: the CPU time this process uses. */
  now?: () => number;
}

/**
 * A typical 64 KiB prose post takes ~10 ms of CPU to render (bench/render.mjs);
 * hostile ones would take seconds. Past this, the reader gets plain text sooner.
 */
export const RENDER_BUDGET_MS = 30;

const DRAWN_BLOCKS = ['code', 'heading', 'html', 'list', 'listitem', 'paragraph', 'table'] as const;

// One of each construct that has a first-use cost.
const WARM_UP =
  '# h\n\n**b** _i_ ~~d~~ `c` [l](https://a.example) https://b.example\n\n> q\n\n- a\n  1. b\n\n```js\nconst x = 1;\n```\n\n| a |\n|---|\n| 1 |\n\n---\n';

const unstyled = (text: string): string => text;

/** Renders one text; `width`, when given, replaces the loader's for this text only. */
export type MarkdownRenderer = (markdown: string, width?: number) => string;

function checkWidth(width: number): void {
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be a positive integer, got ${width}`);
}

/**
 * Marks a code block's lines: a Unicode noncharacter (kept for a program's internal use, and
 * passed through by marked-terminal, which removes control characters); taken out of every
 * text before rendering, so no post can carry it.
 */
const CODE_LINE = '\uFDD0';

const TAB_STOP = 4;

/**
 * Tabs of code as spaces to the next stop: a width is measured in the characters shown, and a
 * terminal would move a tab to a stop of its own, past the cut.
 */
function expandTabs(code: string): string {
  return code.replace(/^.*\t.*$/gm, (line) => {
    let out = '';
    for (const char of line) out += char === '\t' ? ' '.repeat(TAB_STOP - (out.length % TAB_STOP)) : char;
    return out;
  });
}

/**
 * Loads marked and marked-terminal (kept out of start-up: only `tree` and
 * `listen` with markdown posts need them) and returns a renderer for a terminal.
 * The renderer never throws for a text: text it cannot render safely, in its stack and
 * time budget, comes back as plain text under a one-line note saying why.
 */
export async function loadMarkdownRenderer(options: MarkdownOptions): Promise<MarkdownRenderer> {
  const { color } = options;
  checkWidth(options.width);
  // The width of the render under way: a full-screen view passes its own after a resize.
  let width = options.width;
  const budgetMs = options.budgetMs ?? RENDER_BUDGET_MS;
  if (!(budgetMs > 0)) throw new RangeError(`budgetMs must be positive, got ${budgetMs}`);
  const budget = markedBudget(budgetMs, options.now);
  const [{ Marked }, { markedTerminal }, { bareAddresses, imageLabel }] = await Promise.all([
    import('marked'),
    import('marked-terminal'),
    import('./links.js'),
  ]);
  const c = createChalk(color);
  const hyperlinks = color && options.hyperlinks === true;
  const linkStyle = c[options.linkColour ?? 'blue'];

  let quoteDepth = 0;

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
      // A heading is set apart by its style; `## ` in front of it is markdown source.
      showSectionPrefix: false,
    }),
    {
      // Each line of a code block carries a mark through marked-terminal and the highlighter,
      // so the lines can be found again after rendering: they are cut, never re-wrapped.
      walkTokens(token) {
        if (token.type === 'code') token.text = expandTabs(token.text).replace(/^/gm, CODE_LINE);
      },
      tokenizer: bareAddresses.tokenizer,
      extensions: budget.extensions,
      renderer: {
        // The clock is read before each block is drawn too: drawing a table or a
        // long list cannot be interrupted once begun. `false` hands on to marked-terminal.
        ...Object.fromEntries(DRAWN_BLOCKS.map((name) => [name, () => budget.check() ?? false])),
        // marked-terminal prints the source of a tight list item's text, so
        // `- **a**` would keep its asterisks; render its inline tokens instead.
        text(token) {
          budget.check();
          return 'tokens' in token && token.tokens ? this.parser.parseInline(token.tokens) : false;
        },
        // marked-terminal styles every level of a nested quote, and chalk re-wraps
        // each line of the styled text inside: the square of the depth per line.
        // Indented at every level, styled once at the outermost.
        blockquote(token) {
          quoteDepth += 1;
          let quote: string;
          try {
            quote = this.parser.parse(token.tokens).replace(/^\n+/, '').trimEnd();
          } finally {
            quoteDepth -= 1;
          }
          const indented = `  ${quote.split('\n').join('\n  ')}`;
          return `${quoteDepth === 0 ? c.gray.italic(indented) : indented}\n\n`;
        },
        // marked-terminal decides on hyperlinks from process.stdout at import time.
        link(token) {
          const text = this.parser.parseInline(token.tokens);
          // Where the link goes as the link extractor sees it: a control or invisible character ends it.
          const address = destinationAddress(token.href);
          const href = address ?? safeLine(token.href);
          const shown = stripVTControlCharacters(text);
          if (hyperlinks && address !== undefined) {
            const link = hyperlink(address, linkStyle.underline(text));
            // `[https://good.example](https://evil.example)`: the real target must be visible too.
            return claimsOtherTarget(shown, address)
              ? `${link} (${hyperlink(address, linkStyle.underline(address))})`
              : link;
          }
          const url = linkStyle.underline(href);
          return shown === href ? url : `${linkStyle(text)} (${url})`;
        },
        // An image cannot be shown here: what it is and where, as a link counts it.
        image(token) {
          const address = destinationAddress(token.href);
          const label = c.dim(imageLabel(token.text));
          if (address === undefined) return label;
          const url = linkStyle.underline(address);
          return `${label} ${hyperlinks ? hyperlink(address, url) : url}`;
        },
        // marked-terminal ignores column alignment and draws a box wider than the terminal.
        table(token) {
          budget.check();
          const cell = (source: { tokens: Token[] }) => this.parser.parseInline(source.tokens);
          const drawn = drawTable(
            token.header.map(cell),
            token.rows.map((row) => row.map(cell)),
            token.align,
            width,
            c,
          );
          return `${drawn}\n\n`;
        },
        // marked-terminal sizes rules from process.stdout, which is not the output when piped.
        hr() {
          return `${c.dim('-'.repeat(width))}\n\n`;
        },
      },
    },
  );

  // The first render loads highlight.js languages and compiles marked's paths
  // (~60 ms): paid here, once, so the budget measures the text and not the start.
  marked.parse(WARM_UP, { async: false });

  const asPlainText = (text: string, why: string): string =>
    `${c.dim(`(shown as plain text: ${why})`)}\n${wrapToWidth(text.trimEnd(), width)}`;

  return (markdown, at = options.width) => {
    checkWidth(at);
    width = at;
    const text = terminalSafe(markdown).replaceAll(CODE_LINE, '');
    const risk = markdownRisk(text);
    if (risk !== undefined) return asPlainText(text, risk);
    let rendered: string;
    try {
      rendered = budget.measure(() => marked.parse(text, { async: false }).trimEnd());
    } catch (error) {
      return asPlainText(text, error instanceof OverBudget ? 'too slow to render' : 'could not be rendered');
    }
    // Code blocks and tables are coloured by cli-highlight and cli-table3, which
    // follow their own colour detection; without colour nothing may get through.
    const lines = (color ? rendered : stripVTControlCharacters(rendered)).split('\n');
    const code = new Set<number>();
    const unmarked = lines.map((line, index) => {
      if (!line.includes(CODE_LINE)) return line;
      code.add(index);
      return line.replaceAll(CODE_LINE, '');
    });
    // onlyStyling removes no line break: the code lines keep their numbers.
    return wrapToWidth(onlyStyling(unmarked.join('\n')), width, code);
  };
}
