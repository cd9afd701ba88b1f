// What a request says of itself, as a recording keeps it: its transport, and its head with the
// keys it carries learned (then replaced) and only the headers worth keeping.
import type { IncomingHttpHeaders } from 'node:http';
import { isCommandName } from '../../protocol/commands.js';
import type { Json, RecordedRequestHead, RecordedTransport } from '../../protocol/recording.js';
import { isKeyParam } from '../../protocol/redact.js';
import { TREE_COMMAND } from '../../protocol/types.js';
import { TREE_FEED_PATH, WS_PATH } from '../../protocol/paths.js';
import type { RecordSecrets } from './secrets.js';

/** Request headers a recording keeps (the rest say nothing a replay or a reader needs). */
const REQUEST_HEADERS = new Set([
  'content-type',
  'accept',
  'origin',
  'user-agent',
  'sec-websocket-protocol',
  'x-api-key',
  'authorization',
  'idempotency-key',
]);
/** Response headers a recording keeps. */
const RESPONSE_HEADERS = new Set(['content-type', 'location', 'retry-after', 'allow', 'www-authenticate', 'upgrade']);
/** Query parameters of a signed upload address that sign or authorise it (S3, GCS, CloudFront, SAS). */
const SIGNING_PARAM = /sig|token|credential|policy|key-pair|^se$|^sp$/i;
export const UPLOAD_SEGMENT = '/v1/uploads/';
export const ADMIN_PATH = '/_admin';

export function isAdminPath(pathname: string): boolean {
  return pathname === ADMIN_PATH || pathname.startsWith(`${ADMIN_PATH}/`);
}

/** Which of the protocol's transports an upgrade to this address speaks. */
export function transportOf(url: URL): RecordedTransport {
  const path = url.pathname.replace(/\/+$/, '');
  if (path === TREE_FEED_PATH) return url.searchParams.get('format') === 'tree' ? 'tree' : 'graphql';
  if (path === WS_PATH) return url.searchParams.get('format') === 'tree' ? 'tree' : 'ws';
  if (path === `${WS_PATH}/${TREE_COMMAND}`) return 'tree';
  return path.startsWith(`${WS_PATH}/`) ? 'url-form' : 'ws';
}

/** The credential of an `Authorization` value: what follows its scheme, or the whole value. */
function credentialOf(value: string): string {
  return /^\s*\S+\s+(\S+)\s*$/.exec(value)?.[1] ?? value.trim();
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Learns every key and upload token a request carries: its query, its key headers, its path. */
export function learnRequest(secrets: RecordSecrets, url: URL, headers: IncomingHttpHeaders): void {
  for (const [name, value] of url.searchParams) if (isKeyParam(name)) secrets.key(value);
  const apiKey = headerValue(headers['x-api-key']);
  if (apiKey !== undefined) secrets.key(apiKey.trim());
  const authorization = headerValue(headers.authorization);
  if (authorization !== undefined) secrets.key(credentialOf(authorization));
  const path = url.pathname;
  // The URL form with the key as its last segment (`/v1/ws/{key}`) rather than a command.
  if (path.startsWith(`${WS_PATH}/`)) {
    const segment = safeDecode(path.slice(WS_PATH.length + 1).replace(/\/+$/, ''));
    if (segment !== '' && !segment.includes('/') && !isCommandName(segment)) secrets.key(segment);
  }
  if (path.startsWith(UPLOAD_SEGMENT)) secrets.upload(safeDecode(path.slice(UPLOAD_SEGMENT.length)));
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The head of a request as recorded: path, query in order and kept headers, every secret replaced. */
export function recordedHead(
  secrets: RecordSecrets,
  rawUrl: string,
  headers: IncomingHttpHeaders,
): RecordedRequestHead {
  const question = rawUrl.indexOf('?');
  const path = question === -1 ? rawUrl : rawUrl.slice(0, question);
  const query = [...new URLSearchParams(question === -1 ? '' : rawUrl.slice(question + 1))].map(
    ([name, value]): [string, string] => [secrets.scrub(name), secrets.scrub(value)],
  );
  return { path: secrets.scrub(path), query, headers: keptHeaders(secrets, headers, REQUEST_HEADERS) };
}

/** A response's headers as recorded. */
export function responseHeaders(secrets: RecordSecrets, headers: IncomingHttpHeaders): Record<string, string> {
  return keptHeaders(secrets, headers, RESPONSE_HEADERS);
}

function keptHeaders(
  secrets: RecordSecrets,
  headers: IncomingHttpHeaders,
  kept: ReadonlySet<string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const text = headerValue(value);
    const lower = name.toLowerCase();
    if (text !== undefined && (kept.has(lower) || lower.includes('ratelimit'))) out[lower] = secrets.scrub(text);
  }
  return out;
}

/** Learns the keys a client's frame or body carries: `login KEY`, `connectionParams.apiKey`, any key-named field. */
export function learnClientText(secrets: RecordSecrets, text: string, json: Json | undefined): void {
  const login = /^\s*login\s+(\S+)\s*$/i.exec(text);
  if (login) secrets.key(login[1]!);
  if (json !== undefined && typeof json === 'object')
    walk(json, (name, value) => {
      const lower = name.toLowerCase();
      if (isKeyParam(name) || lower === 'x-api-key') secrets.key(value);
      else if (lower === 'authorization') secrets.key(credentialOf(value));
    });
}

/** Learns the upload tokens and signatures a service's answer hands out. */
export function learnServerText(secrets: RecordSecrets, text: string, json: Json | undefined): void {
  if (json === undefined || typeof json !== 'object' || !text.includes('http')) return;
  walk(json, (_name, value) => {
    if (!/^https?:\/\//i.test(value)) return;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return;
    }
    const at = url.pathname.indexOf('/uploads/');
    if (at !== -1) secrets.upload(safeDecode(url.pathname.slice(at + '/uploads/'.length)));
    for (const [name, param] of url.searchParams) if (SIGNING_PARAM.test(name)) secrets.upload(param);
  });
}

/** Calls `visit` with every string value of a JSON value and the name of the field that holds it. */
function walk(value: Json, visit: (name: string, value: string) => void, name = ''): void {
  if (typeof value === 'string') visit(name, value);
  else if (Array.isArray(value)) for (const item of value) walk(item, visit, name);
  else if (value !== null && typeof value === 'object')
    for (const [field, inner] of Object.entries(value)) walk(inner, visit, field);
}
