// What a recorded answer becomes before it is sent: its date-times shifted so that the
// recording's start is the replay's, the upstream's address turned into the replay's own, and
// the placeholders of the recording's secrets into what the live client gave in their place.
import { parseIsoDateTime } from '../../protocol/dates.js';
import type { Json, RecordedBody } from '../../protocol/recording.js';
import { PLACEHOLDER } from './match.js';

/** How every recorded answer is changed at start-up (once, not per connection). */
export interface Rewrite {
  /** Added to every recorded date-time (0: `--replay-times as-recorded`). */
  shiftMs: number;
  /** Origins of the upstream (`https://api.example.com`, `wss://…`) and what replaces each. */
  origins: readonly (readonly [from: string, to: string])[];
}

const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

function rewriteString(text: string, rewrite: Rewrite): string {
  if (rewrite.shiftMs !== 0 && DATE_TIME.test(text)) {
    const ms = parseIsoDateTime(text);
    if (ms !== undefined) return new Date(ms + rewrite.shiftMs).toISOString();
  }
  for (const [from, to] of rewrite.origins) if (text.startsWith(from)) return to + text.slice(from.length);
  return text;
}

/** A recorded value with its date-times shifted and the upstream's origin replaced (a copy). */
export function rewriteJson(value: Json, rewrite: Rewrite): Json {
  if (typeof value === 'string') return rewriteString(value, rewrite);
  if (Array.isArray(value)) return value.map((item) => rewriteJson(item, rewrite));
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, Json> = {};
    for (const [name, item] of Object.entries(value)) copy[name] = rewriteJson(item, rewrite);
    return copy;
  }
  return value;
}

/** A recorded body as sent: JSON re-encoded after the rewrite, text as it is, bytes decoded. */
export function bodyBytes(body: RecordedBody | undefined, rewrite: Rewrite): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  if ('json' in body) return Buffer.from(JSON.stringify(rewriteJson(body.json, rewrite)));
  if ('text' in body) return Buffer.from(body.text);
  return Buffer.from(body.base64, 'base64');
}

/**
 * The origins a recording's upstream answered from (`meta.upstream` is its WebSocket origin;
 * REST answers name the same host over HTTP), each paired with the replay's own.
 */
export function originsOf(upstream: string, replay: { url: string; httpUrl: string }): [string, string][] {
  let host: string;
  let secure: boolean;
  try {
    const url = new URL(upstream);
    host = url.host;
    secure = url.protocol === 'wss:' || url.protocol === 'https:';
  } catch {
    return [];
  }
  const [ws, http] = secure ? ['wss', 'https'] : ['ws', 'http'];
  return [
    [`${ws}://${host}`, replay.url],
    [`${http}://${host}`, replay.httpUrl],
  ];
}

/**
 * Placeholders in an outgoing frame or body, each replaced by what the live client gave in
 * its place (a key it presented), or by a usable token (an upload address's): a client that
 * follows an upload address it was given comes back to the replay with it.
 */
export function fillPlaceholders(text: string, bound: ReadonlyMap<string, string>): string {
  return text.replace(PLACEHOLDER, (placeholder) => {
    const live = bound.get(placeholder);
    if (live !== undefined) return JSON.stringify(live).slice(1, -1);
    return placeholder.slice(1, -1);
  });
}
