import { parsePost } from '../protocol/events.js';
import { STREAMS_PATH } from '../protocol/paths.js';
import type { Post } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, DEFAULT_TIMEOUT_MS } from './errors.js';
import { requestJson } from './rest-read.js';

/**
 * A stream as REST gives it (PROTOCOL.md B6), read tolerantly: only `id` is needed; a
 * field missing or of the wrong type is left out (`name` falls back to the id).
 */
export interface RestStream {
  id: string;
  name: string;
  /** Custom (posts go to selected targets): said, or inferred from the targets it offers. */
  custom: boolean;
  customTargets: string[];
  description?: string;
  label?: string;
  isFeatured?: boolean;
  packageOnly?: boolean;
  customTargetsData?: Record<string, unknown>;
  paidStreamData?: Record<string, unknown>;
  /** This contract's additions: absent from a service that leaves them out. */
  owner?: string;
  followers?: number;
  /** The key's user follows or owns it. */
  following?: boolean;
  /** A custom stream the user follows and does not own: the targets it selected (it sees posts for these only). */
  selectedTargets?: string[];
  /** Whether the key that asked may publish to the stream (it is the stream's key). */
  publish?: boolean;
}

/** Pages of a list followed at most: a service whose tokens never end does not keep the client forever. */
export const MAX_PAGES = 100;
const STREAMS_PAGE = 50;
const POSTS_PAGE = 100;

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === 'string') ? (value as string[]) : undefined;
const object = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

function field<T>(raw: Record<string, unknown>, name: string, check: (value: unknown) => T | undefined) {
  const value = check(raw[name]);
  return value === undefined ? {} : { [name]: value };
}
const string = (value: unknown) => (typeof value === 'string' ? value : undefined);
const boolean = (value: unknown) => (typeof value === 'boolean' ? value : undefined);
const count = (value: unknown) => (Number.isSafeInteger(value) ? (value as number) : undefined);

export function parseStream(value: unknown): RestStream | undefined {
  const raw = object(value);
  if (raw === undefined || typeof raw['id'] !== 'string' || raw['id'] === '') return undefined;
  const customTargets = strings(raw['customTargets']) ?? [];
  return {
    id: raw['id'],
    name: typeof raw['name'] === 'string' ? raw['name'] : raw['id'],
    custom: typeof raw['custom'] === 'boolean' ? raw['custom'] : customTargets.length > 0,
    customTargets,
    ...field(raw, 'description', string),
    ...field(raw, 'label', string),
    ...field(raw, 'isFeatured', boolean),
    ...field(raw, 'packageOnly', boolean),
    ...field(raw, 'customTargetsData', object),
    ...field(raw, 'paidStreamData', object),
    ...field(raw, 'owner', string),
    ...field(raw, 'followers', count),
    ...field(raw, 'following', boolean),
    ...field(raw, 'selectedTargets', strings),
    ...field(raw, 'publish', boolean),
  } as RestStream;
}

/** The token of the next page, under either name the hosted reference uses. */
function nextTokenOf(body: Record<string, unknown>): string | undefined {
  const token = body['nextToken'] ?? body['cursor'];
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/**
 * Follows a paged list from its first page while the service gives a new token, at most
 * `MAX_PAGES`; `enough` stops it early.
 */
async function pages<T>(
  read: (token: string | undefined) => Promise<{ items: T[]; next: string | undefined }>,
  enough: (items: readonly T[]) => boolean = () => false,
): Promise<T[]> {
  const items: T[] = [];
  const tokens = new Set<string>();
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { items: more, next } = await read(token);
    items.push(...more);
    // A repeated token would read the same pages again, for ever.
    if (next === undefined || tokens.has(next) || enough(items)) break;
    tokens.add(next);
    token = next;
  }
  return items;
}

/** `GET /v1/streams`, every page: the streams the service lists for the key, each once. */
export async function fetchStreams(
  endpoints: readonly Endpoint[],
  apiKey: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<RestStream[]> {
  const all = await pages(async (token) => {
    const query = new URLSearchParams({ limit: String(STREAMS_PAGE), ...(token ? { nextToken: token } : {}) });
    const body = await requestJson(endpoints, apiKey, `${STREAMS_PATH}?${query}`, timeoutMs);
    if (!Array.isArray(body['streams']))
      throw new ClientError('refused', `GET ${STREAMS_PATH} answered without a list`);
    const items = body['streams'].map(parseStream).filter((stream) => stream !== undefined);
    return { items, next: nextTokenOf(body) };
  });
  const byId = new Map(all.map((stream) => [stream.id, stream]));
  return [...byId.values()];
}

/** `GET /v1/streams/{id}`: one stream, as `{...stream}` or wrapped as `{stream: {...}}`. */
export async function fetchStream(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<RestStream> {
  const path = `${STREAMS_PATH}/${encodeURIComponent(streamId)}`;
  const body = await requestJson(endpoints, apiKey, path, timeoutMs);
  const stream = parseStream(object(body['stream']) ?? body);
  if (!stream) throw new ClientError('refused', `GET ${path} answered without a stream`);
  return stream;
}

/** `GET /v1/streams/{id}/posts`: the stream's most recent `limit` posts, newest first, page after page. */
export async function fetchPosts(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  limit: number,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<Post[]> {
  const base = `${STREAMS_PATH}/${encodeURIComponent(streamId)}/posts`;
  const posts = await pages(
    async (token) => {
      const query = new URLSearchParams({
        limit: String(Math.min(limit, POSTS_PAGE)),
        ...(token ? { nextToken: token } : {}),
      });
      const body = await requestJson(endpoints, apiKey, `${base}?${query}`, timeoutMs);
      if (!Array.isArray(body['posts'])) throw new ClientError('refused', `GET ${base} answered without a list`);
      const items = body['posts'].map((post) => parsePost(post)).filter((post) => post !== undefined);
      return { items, next: nextTokenOf(body) };
    },
    (items) => items.length >= limit,
  );
  return posts.slice(0, limit);
}

/**
 * `POST /v1/streams/{id}/custom-targets`: replaces the key's user's selected targets on a
 * custom stream it follows; resolves with the selection the service kept.
 */
export async function setCustomTargets(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  targets: readonly string[],
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<string[]> {
  const path = `${STREAMS_PATH}/${encodeURIComponent(streamId)}/custom-targets`;
  const body = await requestJson(endpoints, apiKey, path, timeoutMs, { customTargets: [...targets] });
  return strings(body['customTargets']) ?? [...targets];
}
