import type { StreamSummary } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';
import { DEFAULT_TIMEOUT_MS } from './errors.js';
import { API_KEY_HEADER, STREAMS_PATH } from '../protocol/paths.js';

/** `GET /v1/streams`: the streams the key's user follows or owns (for prompts); rejects after `timeoutMs`. */
export async function listStreams(
  endpoint: Endpoint,
  apiKey: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<StreamSummary[]> {
  const response = await fetch(`${endpoint.httpBase}${STREAMS_PATH}`, {
    headers: { [API_KEY_HEADER]: apiKey },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) return [];
  const body = (await response.json()) as { streams?: StreamSummary[] };
  return Array.isArray(body.streams) ? body.streams : [];
}
