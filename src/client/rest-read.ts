import { parsePost } from '../protocol/events.js';
import { API_KEY_HEADER, STREAMS_PATH } from '../protocol/paths.js';
import type { Post, StreamSummary } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, DEFAULT_TIMEOUT_MS, describeNetworkError, timeoutError } from './errors.js';

// A gateway's answers for an instance that is away: the next address may answer.
const NEXT_ADDRESS_STATUSES = new Set([502, 503, 504]);

/**
 * `GET` of a REST path with the key in its header, on the first address that answers (an
 * unreachable one, or a 502-504, moves to the next). Resolves with the parsed JSON body of a
 * 2xx; a refusal is a `refused` ClientError carrying the service's code (401: `unauthorized`).
 */
async function getJson(
  endpoints: readonly Endpoint[],
  apiKey: string,
  path: string,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const failures: string[] = [];
  for (const [index, endpoint] of endpoints.entries()) {
    const url = `${endpoint.httpBase}${path}`;
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, { headers: { [API_KEY_HEADER]: apiKey }, signal });
    } catch (error) {
      if (signal.aborted) throw timeoutError(timeoutMs, `a reply to GET ${url}`);
      const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
      failures.push(`${url}: ${describeNetworkError(cause)}`);
      continue;
    }
    if (NEXT_ADDRESS_STATUSES.has(response.status) && index < endpoints.length - 1) {
      await response.body?.cancel();
      failures.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      if (signal.aborted) throw timeoutError(timeoutMs, `a reply to GET ${url}`);
      // A proxy's HTML error page: the status says enough.
    }
    const payload = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    if (response.ok) return payload;
    const error = (payload['error'] ?? {}) as { code?: unknown; message?: unknown };
    const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
    const message =
      typeof error.message === 'string' ? error.message : `HTTP ${response.status} ${response.statusText}`;
    if (response.status === 401)
      throw new ClientError('unauthorized', `the service refused the key: HTTP 401: ${message}`, 'unauthorized');
    throw new ClientError('refused', `${code}: ${message}`, code);
  }
  throw new ClientError('unreachable', `cannot reach the service: ${failures.join('; ')}`);
}

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === 'string') ? (value as string[]) : undefined;

/** A stream of the list, read tolerantly: what is missing or of the wrong type is left out. */
function parseStream(value: unknown): StreamSummary | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  if (typeof raw['id'] !== 'string') return undefined;
  const selectedTargets = strings(raw['selectedTargets']);
  return {
    id: raw['id'],
    name: typeof raw['name'] === 'string' ? raw['name'] : raw['id'],
    custom: raw['custom'] === true,
    customTargets: strings(raw['customTargets']) ?? [],
    ...(typeof raw['owner'] === 'string' ? { owner: raw['owner'] } : {}),
    ...(selectedTargets ? { selectedTargets } : {}),
    ...(typeof raw['publish'] === 'boolean' ? { publish: raw['publish'] } : {}),
  };
}

/** `GET /v1/streams`: the streams the key's user follows or owns. */
export async function fetchStreams(
  endpoints: readonly Endpoint[],
  apiKey: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<StreamSummary[]> {
  const body = await getJson(endpoints, apiKey, STREAMS_PATH, timeoutMs);
  if (!Array.isArray(body['streams'])) throw new ClientError('refused', 'GET /v1/streams answered without a list');
  return body['streams'].map(parseStream).filter((stream) => stream !== undefined);
}

/** `GET /v1/streams/{id}/posts?limit=N`: the stream's most recent posts, newest first. */
export async function fetchPosts(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  limit: number,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<Post[]> {
  const path = `${STREAMS_PATH}/${encodeURIComponent(streamId)}/posts?limit=${limit}`;
  const body = await getJson(endpoints, apiKey, path, timeoutMs);
  if (!Array.isArray(body['posts'])) throw new ClientError('refused', `GET ${path} answered without a list`);
  return body['posts'].map((post) => parsePost(post)).filter((post) => post !== undefined);
}
