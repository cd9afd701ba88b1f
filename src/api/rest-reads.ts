/**
 * The REST reads the CLI's `streams`, `history`, `targets` and `post`'s prompt make, their
 * failures as the library's errors (codes, the HTTP status of a refusal, no key in a message).
 * Not exported from the package: its users have `connect` and `publishRest`.
 * @internal
 */
import type { Endpoint } from '../client/endpoint.js';
import * as rest from '../client/rest-streams.js';
import type { RestStream } from '../client/rest-streams.js';
import { listStreams as listFollowed } from '../client/streams.js';
import type { Post, StreamSummary } from '../protocol/types.js';
import { fromClientError } from './errors.js';

export type { RestStream } from '../client/rest-streams.js';
export { StreamNames } from '../client/stream-names.js';

/** One REST read, a failure thrown as StreamPostsError without the key. */
async function read<T>(apiKey: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw fromClientError(error, [apiKey, encodeURIComponent(apiKey)]);
  }
}

/** `GET /v1/streams`, every page. */
export function fetchStreams(endpoints: readonly Endpoint[], apiKey: string, timeoutMs: number): Promise<RestStream[]> {
  return read(apiKey, () => rest.fetchStreams(endpoints, apiKey, timeoutMs));
}

/** `GET /v1/streams/{id}`. */
export function fetchStream(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  timeoutMs: number,
): Promise<RestStream> {
  return read(apiKey, () => rest.fetchStream(endpoints, apiKey, streamId, timeoutMs));
}

/** `GET /v1/streams/{id}/posts`: the most recent `limit`, newest first. */
export function fetchPosts(
  endpoints: readonly Endpoint[],
  apiKey: string,
  streamId: string,
  limit: number,
  timeoutMs: number,
): Promise<Post[]> {
  return read(apiKey, () => rest.fetchPosts(endpoints, apiKey, streamId, limit, timeoutMs));
}

/** `POST /v1/streams/{id}/custom-targets`: the selection the service kept. */
export function setCustomTargets(
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
