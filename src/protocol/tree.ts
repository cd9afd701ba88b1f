import { MAX_SUGGESTION_SPELLINGS, MAX_TREE_SUGGESTIONS } from './limits.js';
import type { Post, TreeItem } from './types.js';
import { firstLink, webAddresses } from './urls.js';

// "$BNB", "$btc" count; "$100" and "US$5" do not.
const CASHTAG_PATTERN = /(?<![\w$])\$([A-Za-z][A-Za-z0-9]{0,9})(?![A-Za-z0-9])/g;

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const CODE_SPAN = /(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g;

/**
 * Markdown without its code (fenced blocks and code spans): an address quoted as code
 * is an example, not where the post points.
 */
function withoutCode(markdown: string): string {
  let fence: string | undefined;
  const prose: string[] = [];
  for (const line of markdown.split('\n')) {
    const opener = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
    } else if (opener !== undefined) {
      fence = opener;
    } else {
      prose.push(line);
    }
  }
  return prose.join('\n').replace(CODE_SPAN, ' ');
}

export interface CoinSuggestion {
  coin: string;
  found: string[];
}

/**
 * Cashtags in order of first appearance, each with the spellings found; the first
 * MAX_TREE_SUGGESTIONS coins only, so a post full of distinct cashtags cannot make its tree
 * item several times the size of the post.
 */
export function cashtags(text: string): CoinSuggestion[] {
  const byCoin = new Map<string, Set<string>>();
  // "$BTC" inside a URL is part of an address, not a mention.
  let withoutUrls = '';
  let copied = 0;
  for (const { start, end } of webAddresses(text)) {
    withoutUrls += `${text.slice(copied, start)} `;
    copied = end;
  }
  withoutUrls += text.slice(copied);
  for (const match of withoutUrls.matchAll(CASHTAG_PATTERN)) {
    const symbol = match[1];
    if (symbol === undefined) continue;
    const coin = symbol.toUpperCase();
    let found = byCoin.get(coin);
    if (!found) {
      if (byCoin.size === MAX_TREE_SUGGESTIONS) continue;
      found = new Set();
      byCoin.set(coin, found);
    }
    if (found.size < MAX_SUGGESTION_SPELLINGS) found.add(match[0]);
  }
  return [...byCoin].map(([coin, found]) => ({ coin, found: [...found] }));
}

/**
 * Maps a post to a tree item. A hidden post carries no body, link or coins:
 * anything derived from the text would leak it before its release.
 */
export function toTreeItem(post: Post): TreeItem {
  const visibleText = post.hidden || post.text === null ? '' : post.text;
  const item: TreeItem = {
    _id: post.id,
    title: post.streamName,
    body: visibleText,
    en: visibleText,
    source: post.streamName,
    time: Date.parse(post.createdAt),
    type: 'stream-post',
    contentType: post.contentType,
    streamId: post.streamId,
    hidden: post.hidden,
  };
  if (post.releaseAt !== null) item.releaseAt = Date.parse(post.releaseAt);
  const link = firstLink(post.contentType === 'markdown' ? withoutCode(visibleText) : visibleText);
  if (link !== undefined) item.link = link;
  const suggestions = cashtags(visibleText);
  const first = suggestions[0];
  if (first) {
    item.coin = first.coin;
    item.suggestions = suggestions;
  }
  return item;
}
