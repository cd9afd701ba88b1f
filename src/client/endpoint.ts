import { redactUrl } from '../protocol/redact.js';
import { ClientError } from './errors.js';

export const DEFAULT_URL = 'ws://127.0.0.1:8787';
const WS_PATH = '/v1/ws';

/** Where the service lives: the WebSocket endpoint and the matching REST origin. */
export interface Endpoint {
  /** `ws(s)://host[:port][/prefix]/v1/ws`, no query. */
  wsUrl: string;
  /** `http(s)://host[:port][/prefix]`: REST paths (`/v1/streams/…`) go after it. */
  httpBase: string;
}

/**
 * Accepts a base URL with or without `/v1/ws` (`ws://localhost:8787`,
 * `wss://api.example.com/v1/ws`), and the http(s) form of the same origin,
 * which people paste from REST docs.
 */
export function resolveEndpoint(raw: string): Endpoint {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ClientError('usage', `--url must be a ws:// or wss:// URL, got "${redactUrl(raw)}"`);
  }
  const secure = url.protocol === 'wss:' || url.protocol === 'https:';
  if (!secure && url.protocol !== 'ws:' && url.protocol !== 'http:') {
    throw new ClientError('usage', `--url must be a ws:// or wss:// URL, got "${redactUrl(raw)}"`);
  }
  if (url.username || url.password) {
    throw new ClientError('usage', '--url must not carry a user name or password; give the key with --api-key-file');
  }
  if (url.search || url.hash) {
    throw new ClientError('usage', '--url must not have a query or fragment; give the key with --api-key-file or STREAM_POSTS_API_KEY');
  }
  let prefix = url.pathname.replace(/\/+$/, '');
  if (prefix.endsWith(WS_PATH)) prefix = prefix.slice(0, -WS_PATH.length);
  const host = url.host;
  return {
    wsUrl: `${secure ? 'wss' : 'ws'}://${host}${prefix}${WS_PATH}`,
    httpBase: `${secure ? 'https' : 'http'}://${host}${prefix}`,
  };
}
