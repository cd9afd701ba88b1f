// What passes the proxy besides frames and bodies: which headers go on, and how a proxied
// frame is shown to `--trace`.
import type { IncomingHttpHeaders } from 'node:http';

/** One proxied frame or request as `--trace` shows it: keys already replaced by their placeholders. */
export interface ProxiedFrame {
  /** Which proxied connection (or request) it belongs to, counted from 1. */
  connection: number;
  /** `sent`: from the client to the upstream; `received`: the other way. */
  direction: 'sent' | 'received';
  text: string;
}

export type ProxyTrace = (frame: ProxiedFrame) => void;

/** Headers of one hop only (RFC 9110 §7.6.1), never passed on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);
/** The WebSocket client sets its own handshake headers. */
const HANDSHAKE = new Set([
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
]);

/**
 * The headers passed on. A request asks for no compression (`accept-encoding` dropped), so the
 * upstream's answer is text the recording can keep as it came and any client can read.
 */
export function forwardedHeaders(
  headers: IncomingHttpHeaders,
  kind: 'upgrade' | 'request' | 'response',
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower)) continue;
    if (kind !== 'response' && lower === 'accept-encoding') continue;
    if (kind === 'upgrade' && HANDSHAKE.has(lower)) continue;
    if (kind === 'response' && lower.startsWith('sec-websocket-')) continue;
    out[lower] = value;
  }
  return out;
}
