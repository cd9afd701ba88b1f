import { parsePost } from '../protocol/events.js';
import { backoffDelay } from './backoff.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, describeNetworkError } from './errors.js';
import { commandFrame } from './publish-args.js';
import type { PublishData, PublishOutcome } from './publisher.js';

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const MAX_TRIES = 4;

/**
 * `POST /v1/streams/{id}/post`. Retries a refused connection, 429 and 5xx
 * gateway errors a few times: the idempotency key makes a retry safe.
 */
export async function publishRest(endpoint: Endpoint, apiKey: string | undefined, args: PublishData): Promise<PublishOutcome> {
  const url = `${endpoint.httpBase}/v1/streams/${encodeURIComponent(args.streamId)}/post`;
  const { streamId: _inPath, ...body } = commandFrame(args).data;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== undefined) headers['x-api-key'] = apiKey;
  for (let attempt = 1; ; attempt++) {
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (error) {
      if (attempt >= MAX_TRIES) throw new ClientError('unreachable', `cannot reach ${url}: ${describeNetworkError((error as { cause?: Error & { code?: string } }).cause ?? (error as Error))}`);
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt - 1)));
      continue;
    }
    if (RETRY_STATUSES.has(response.status) && attempt < MAX_TRIES) {
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt - 1)));
      continue;
    }
    let payload: Record<string, unknown> = {};
    try {
      payload = (await response.json()) as Record<string, unknown>;
    } catch {
      // A proxy's HTML error page: the status says enough.
    }
    if (response.ok) {
      const post = parsePost(payload['post']);
      if (!post) throw new ClientError('refused', `${url} answered HTTP ${response.status} without a post`);
      return { ok: true, post, duplicate: payload['duplicate'] === true, attempts: attempt };
    }
    const error = (payload['error'] ?? {}) as { code?: unknown; message?: unknown };
    const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
    const message = typeof error.message === 'string' ? error.message : `HTTP ${response.status} ${response.statusText}`;
    if (response.status === 401) throw new ClientError('unauthorized', `the service refused the key: HTTP 401: ${message}`, 'unauthorized');
    return { ok: false, code, message, status: response.status };
  }
}
