import { TREE_FEED_ARGS, TREE_FEED_PATH, WS_PATH } from '../protocol/paths.js';
import { redactUrl } from '../protocol/redact.js';
import { ClientError } from './errors.js';

export const DEFAULT_URL = 'ws://127.0.0.1:8787';
/** Query parameters a tree feed address may carry: none of them a secret. */
const TREE_FEED_PARAMS = new Set<string>(['format', ...TREE_FEED_ARGS]);

/**
 * The `code` of an endpoint error whose fix is to give the key some other way than in the
 * URL: callers say how (the API: the `apiKey` option; the CLI: its key flags).
 */
export const KEY_IN_URL = 'key-in-url';

/** Where the service lives: the WebSocket endpoint and the matching REST origin. */
export interface Endpoint {
  /** `ws(s)://host[:port][/prefix]/v1/ws`, no query; or the tree feed address with its query. */
  wsUrl: string;
  /**
   * The hosted tree feed address (`…/graphql?format=tree`): connecting subscribes, tree
   * items are all that arrive, and nothing is sent.
   */
  treeFeed?: true;
  /** `http(s)://host[:port][/prefix]`: REST paths (`/v1/streams/…`) go after it. */
  httpBase: string;
}

/**
 * What endpoint errors call the address and how they say to give the key instead: the
 * library's option (`url`, the `apiKey` option), or the CLI's flags.
 */
export interface EndpointWords {
  url: string;
  keyAdvice: string;
}

export const LIBRARY_WORDS: EndpointWords = { url: 'url', keyAdvice: 'give the key as apiKey' };

const accepted = (words: EndpointWords) => `${words.url} must be a ws://, wss://, http:// or https:// URL`;

/**
 * Accepts a base URL with or without `/v1/ws` (`ws://localhost:8787`,
 * `wss://api.example.com/v1/ws`), and the http(s) form of the same origin,
 * which people paste from REST docs.
 */
export function resolveEndpoint(raw: string, words: EndpointWords = LIBRARY_WORDS): Endpoint {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ClientError('usage', `${accepted(words)}, got "${redactUrl(raw)}"`);
  }
  const secure = url.protocol === 'wss:' || url.protocol === 'https:';
  if (!secure && url.protocol !== 'ws:' && url.protocol !== 'http:') {
    throw new ClientError('usage', `${accepted(words)}, got "${redactUrl(raw)}"`);
  }
  if (url.username || url.password) {
    throw new ClientError(
      'usage',
      `${words.url} must not carry a user name or password; ${words.keyAdvice}`,
      KEY_IN_URL,
    );
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith(TREE_FEED_PATH) && url.searchParams.get('format') === 'tree' && !url.hash) {
    return treeFeedEndpoint(url, secure, path.slice(0, -TREE_FEED_PATH.length), words);
  }
  if (url.search || url.hash) {
    throw new ClientError('usage', `${words.url} must not have a query or fragment; ${words.keyAdvice}`, KEY_IN_URL);
  }
  let prefix = path;
  if (prefix.endsWith(WS_PATH)) prefix = prefix.slice(0, -WS_PATH.length);
  const host = url.host;
  return {
    wsUrl: `${secure ? 'wss' : 'ws'}://${host}${prefix}${WS_PATH}`,
    httpBase: `${secure ? 'https' : 'http'}://${host}${prefix}`,
  };
}

function treeFeedEndpoint(url: URL, secure: boolean, prefix: string, words: EndpointWords): Endpoint {
  // Named, not echoed: a key pasted into the URL must not end up in an error message.
  const other = [...url.searchParams.keys()].find((name) => !TREE_FEED_PARAMS.has(name));
  if (other !== undefined) {
    throw new ClientError(
      'usage',
      `${words.url}: a tree feed address takes format=tree, streamIds and lastPosts only${other === 'apiKey' ? `; ${words.keyAdvice}` : ''}`,
      other === 'apiKey' ? KEY_IN_URL : undefined,
    );
  }
  return {
    wsUrl: `${secure ? 'wss' : 'ws'}://${url.host}${prefix}${TREE_FEED_PATH}${url.search}`,
    httpBase: `${secure ? 'https' : 'http'}://${url.host}${prefix}`,
    treeFeed: true,
  };
}

/**
 * The addresses of one service, tried in order (the first first; a failure or a drop
 * moves to the next): each as `resolveEndpoint` takes it, all of one kind.
 */
export function resolveEndpoints(raw: string | readonly string[], words: EndpointWords = LIBRARY_WORDS): Endpoint[] {
  const list = typeof raw === 'string' ? [raw] : raw;
  if (list.length === 0) throw new ClientError('usage', `${words.url} must name at least one address`);
  const endpoints = list.map((each) => resolveEndpoint(each, words));
  const feeds = endpoints.filter((endpoint) => endpoint.treeFeed).length;
  if (feeds !== 0 && feeds !== endpoints.length) {
    throw new ClientError(
      'usage',
      `${words.url}: give every address as a tree feed address (…/graphql?format=tree), or none of them`,
    );
  }
  return endpoints;
}

/**
 * Addresses in one string, comma-separated (`ws://a:1,ws://b:2`): split only before a
 * scheme, so a tree feed address keeps the commas of its `streamIds=a,b`.
 */
export function splitUrls(text: string): string[] {
  return text
    .split(/,(?=\s*(?:wss?|https?):\/\/)/i)
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Whether an address, or a list of them (all of one kind), is the tree feed. */
export function isTreeFeed(endpoint: Endpoint | readonly Endpoint[]): boolean {
  return [endpoint].flat()[0]?.treeFeed === true;
}
