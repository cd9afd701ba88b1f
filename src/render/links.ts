import { Marked, type MarkedExtension, type Token, type Tokens } from 'marked';
import { addressAt, destinationAddress, webAddresses } from '../protocol/urls.js';
import { markedBudget } from './budget.js';
import { markdownRisk } from './markdown-guard.js';
import { safeLine } from './text.js';

/**
 * The one link extractor and headline stripper, for `tree`, `listen` and `terminal` alike: a
 * plain text's addresses by the one scanner (src/protocol/urls.ts), a markdown text's from
 * marked's tokens (destinations with parentheses, `<…>` destinations, images), its bare
 * addresses by the same scanner, so a renderer and a link list never disagree on a URL.
 */

/** marked's GFM bare addresses, found by the one scanner (marked's own ends at no control character). */
export const bareAddresses: MarkedExtension = {
  tokenizer: {
    url(src) {
      // www. and e-mail addresses are marked's to find; they are never opened as web links.
      if (!/^https?:\/\//i.test(src)) return false;
      const found = addressAt(src, 0);
      if (found === undefined) return undefined;
      const { url } = found;
      return { type: 'link', raw: url, text: url, href: url, tokens: [{ type: 'text', raw: url, text: url }] };
    },
  },
};

/**
 * Most CPU time reading one text's markdown may take (a feed row reads each post's once), as
 * much as a render may take: a 64 KiB post dense with links and emphasis took 18 ms, hostile
 * emphasis would take 40 s. Past this, the text's links and headline are read from it as
 * plain text.
 */
const LEXING_BUDGET_MS = 30;

const budget = markedBudget(LEXING_BUDGET_MS, undefined);

let lexer: Marked | undefined;

// What the first lexing compiles of marked (its paths for links, emphasis, images, lists):
// compiled once, outside the budget, so a short post is never cut for the start's cost.
const WARM_UP =
  '# A\n\n*a* **b** `c` [d](https://e.example/(f)) ![g](<https://h.example/i j.png>) https://k.example\n\n- l\n\n> m\n';

function warmedUp(marked: Marked): Marked {
  marked.lexer(WARM_UP);
  return marked;
}

/**
 * marked's tokens of a markdown text, lexed with the one scanner for bare addresses; undefined
 * when it cannot be lexed safely (too deeply nested, too slow), and is to be read as plain text.
 */
function markdownTokens(text: string): Token[] | undefined {
  if (markdownRisk(text) !== undefined) return undefined;
  const marked = (lexer ??= warmedUp(new Marked(bareAddresses, { extensions: budget.extensions })));
  try {
    return budget.measure(() => marked.lexer(text));
  } catch {
    // Over the budget, or a shape the guard did not foresee: the reader still gets the text.
    return undefined;
  }
}

/** Each web address a markdown text links to or shows as an image, in order; undefined when it cannot be lexed. */
function markdownAddresses(text: string): string[] | undefined {
  const tokens = markdownTokens(text);
  if (tokens === undefined) return undefined;
  const found: string[] = [];
  lexer!.walkTokens(tokens, (token) => {
    if (token.type !== 'link' && token.type !== 'image') return;
    const address = destinationAddress((token as Tokens.Link | Tokens.Image).href);
    if (address !== undefined) found.push(address);
  });
  return found;
}

/** The web addresses of a post's text, in order, each once, at most `limit`. */
export function linksOf(text: string, markdown: boolean, limit = Number.POSITIVE_INFINITY): string[] {
  const all = (markdown ? markdownAddresses(text) : undefined) ?? webAddresses(text).map((found) => found.url);
  return [...new Set(all)].slice(0, limit);
}

/** What an image shows in place of itself: its alt text, then where it is. */
export function imageLabel(alt: string): string {
  const shown = safeLine(alt);
  return shown === '' ? '[image]' : `[image: ${shown}]`;
}

/** The words of inline tokens as a reader sees them: no marks, a link's text without its address. */
function inlineText(tokens: readonly Token[]): string {
  let text = '';
  for (const token of tokens) {
    switch (token.type) {
      case 'image':
        text += imageLabel(token.text);
        break;
      case 'br':
        text += '\n';
        break;
      case 'html':
        break;
      case 'escape':
      case 'codespan':
        text += token.text;
        break;
      default:
        text +=
          'tokens' in token && Array.isArray(token.tokens) && token.tokens.length > 0
            ? inlineText(token.tokens as Token[])
            : ((token as Tokens.Generic).text ?? '');
    }
  }
  return text;
}

/** The first line a reader sees in block tokens: a heading, a paragraph, a list's first item, a quote's first line. */
function firstLine(tokens: readonly Token[]): string | undefined {
  for (const token of tokens) {
    let text: string | undefined;
    switch (token.type) {
      case 'list':
        text = firstLine((token as Tokens.List).items);
        break;
      case 'list_item':
      case 'blockquote':
        text = firstLine((token as Tokens.Blockquote).tokens);
        break;
      case 'table':
        text = (token as Tokens.Table).header.map((cell) => inlineText(cell.tokens)).join(' ');
        break;
      case 'code':
        text = (token as Tokens.Code).text;
        break;
      case 'heading':
      case 'paragraph':
      case 'text':
        text = 'tokens' in token && token.tokens ? inlineText(token.tokens) : (token as Tokens.Text).text;
        break;
      default:
        continue;
    }
    const line = text?.split('\n').find((candidate) => candidate.trim() !== '');
    if (line !== undefined) return line;
  }
  return undefined;
}

const MAX_HEADLINE = 400;

/**
 * The headline of a post: its first line as a reader sees it, on one line. Markdown is read by
 * marked's lexer, not by patterns: `[Reuters (exclusive)](https://x.example/a-(exclusive))`
 * reads "Reuters (exclusive)".
 */
export function headlineOf(text: string, markdown: boolean): string {
  // A headline needs at most the first few hundred characters: a 64 KiB post costs no more.
  const start = text.slice(0, 4 * MAX_HEADLINE);
  const tokens = markdown ? markdownTokens(start) : undefined;
  const line =
    tokens === undefined ? start.split('\n').find((candidate) => candidate.trim() !== '') : firstLine(tokens);
  const shown = safeLine(line ?? '');
  return shown.length > MAX_HEADLINE ? `${shown.slice(0, MAX_HEADLINE - 1)}…` : shown;
}
