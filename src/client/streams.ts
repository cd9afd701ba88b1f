import type { StreamSummary } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';

/** `GET /v1/streams`: the streams the key's user follows or owns (for prompts). */
export async function listStreams(endpoint: Endpoint, apiKey: string): Promise<StreamSummary[]> {
  const response = await fetch(`${endpoint.httpBase}/v1/streams`, { headers: { 'x-api-key': apiKey } });
  if (!response.ok) return [];
  const body = (await response.json()) as { streams?: StreamSummary[] };
  return Array.isArray(body.streams) ? body.streams : [];
}
