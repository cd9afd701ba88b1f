// The service's REST reads (and the custom-target selection), opening no WebSocket: the streams
// a key may see, one stream, a stream's recent posts. Each fails as the library's errors
// (codes, the HTTP status of a refusal, no key in a message). The `…From` forms take the
// addresses already parsed: the CLI's commands use them through internal.ts.
import type { Endpoint } from '../client/endpoint.js';
import * as rest from '../client/rest-streams.js';
import type { RestStream } from '../client/rest-streams.js';
import { listStreams as listFollowed } from '../client/streams.js';
import type { Post, StreamSummary } from '../protocol/types.js';
import { libraryEndpoints } from './endpoints.js';
import { fromClientError } from './errors.js';
import {
  integer,
  LIBRARY_TIMEOUT_MS,
  OptionTable,
  optional,
  requiredText,
  textList,
  TIMEOUT_OPTION,
  URL_OPTION,
  type ServiceUrl,
} from './option-table.js';

export type { RestStream } from '../client/rest-streams.js';

/** Where and as whom a REST read asks. */
export interface RestReadOptions {
  /** The service: `server.httpUrl`, or any url `connect` takes; or several instances of it, tried in turn. */
  url: string | readonly string[];
  /** A reader key, or a stream key. */
  apiKey: string;
  /** The longest wait for each reply, in ms. Default 10000. */
  timeoutMs?: number;
}

const MAX_LIMIT = 100;
const DEFAULT_LIMIT = 20;

const READ_OPTIONS = { url: URL_OPTION, apiKey: requiredText, ...optional({ timeoutMs: TIMEOUT_OPTION }) };
const FETCH_STREAMS = new OptionTable('fetchStreams', READ_OPTIONS);
const FETCH_STREAM = new OptionTable('fetchStream', { ...READ_OPTIONS, streamId: requiredText });
const FETCH_POSTS = new OptionTable('fetchPosts', {
  ...READ_OPTIONS,
  streamId: requiredText,
  ...optional({ limit: integer(1, MAX_LIMIT) }),
});
const SET_CUSTOM_TARGETS = new OptionTable('setCustomTargets', {
  ...READ_OPTIONS,
  streamId: requiredText,
  targets: textList(),
});

/** One REST read, a failure thrown as StreamPostsError without the key. */
async function read<T>(apiKey: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw fromClientError(error, [apiKey, encodeURIComponent(apiKey)]);
  }
}

/** The addresses, key and wait of checked read options. */
function target(given: { url: ServiceUrl; apiKey: string; timeoutMs: number | undefined }) {
  return [libraryEndpoints(given.url), given.apiKey, given.timeoutMs ?? LIBRARY_TIMEOUT_MS] as const;
}

/** `GET /v1/streams`, every page: the streams the key may see, with what the service tells of each. */
export function fetchStreams(options: RestReadOptions): Promise<RestStream[]> {
  return fetchStreamsFrom(...target(FETCH_STREAMS.check(options)));
}

/** `GET /v1/streams/{streamId}`: one stream; `not-found` when the key may not see it. */
export function fetchStream(options: RestReadOptions & { streamId: string }): Promise<RestStream> {
  const given = FETCH_STREAM.check(options);
  const [endpoints, apiKey, timeoutMs] = target(given);
  return fetchStreamFrom(endpoints, apiKey, given.streamId, timeoutMs);
}

/** `GET /v1/streams/{streamId}/posts`: its most recent `limit` posts (1-100, default 20), newest first. */
export function fetchPosts(options: RestReadOptions & { streamId: string; limit?: number }): Promise<Post[]> {
  const given = FETCH_POSTS.check(options);
  const [endpoints, apiKey, timeoutMs] = target(given);
  return fetchPostsFrom(endpoints, apiKey, given.streamId, given.limit ?? DEFAULT_LIMIT, timeoutMs);
}

/**
 * `POST /v1/streams/{streamId}/custom-targets`: replaces the key's user's selected targets on a
 * custom stream it follows (as `client.setCustomTargets` does, without a connection); resolves
 * with the selection the service kept.
 */
export function setCustomTargets(
  options: RestReadOptions & { streamId: string; targets: readonly string[] },
): Promise<string[]> {
  const given = SET_CUSTOM_TARGETS.check(options);
  const [endpoints, apiKey, timeoutMs] = target(given);
  return setCustomTargetsAt(endpoints, apiKey, given.streamId, given.targets, timeoutMs);
}

/** `fetchStreams` at addresses already parsed. */
export function fetchStreamsFrom(
  endpoints: readonly Endpoint[],
  apiKey: string,
  timeoutMs: number,
): Promise<RestStream[]> {
  return read(apiKey, () => rest.fetchStreams(endpoints, apiKey, timeoutMs));
}

/** `fetchStream` at addresses already parsed. */
export function fetchStreamFrom(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  timeoutMs: number,
): Promise<RestStream> {
  return read(apiKey, () => rest.fetchStream(endpoints, apiKey, streamId, timeoutMs));
}

/** `fetchPosts` at addresses already parsed. */
export function fetchPostsFrom(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  limit: number,
  timeoutMs: number,
): Promise<Post[]> {
  return read(apiKey, () => rest.fetchPosts(endpoints, apiKey, streamId, limit, timeoutMs));
}

/** `setCustomTargets` at addresses already parsed. */
export function setCustomTargetsAt(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  targets: readonly string[],
  timeoutMs: number,
): Promise<string[]> {
  return read(apiKey, () => rest.setCustomTargets(endpoints, apiKey, streamId, targets, timeoutMs));
}

/** The streams the key's user follows or owns, for a prompt's choices: none when the service will not say. */
export function listStreams(endpoint: Endpoint, apiKey: string, timeoutMs: number): Promise<StreamSummary[]> {
  return read(apiKey, () => listFollowed(endpoint, apiKey, timeoutMs));
}
