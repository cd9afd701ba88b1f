import { parsePost } from '../protocol/events.js';
import { backoffDelay } from './backoff.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, DEFAULT_TIMEOUT_MS, describeNetworkError, keyRefusedError, timeoutError } from './errors.js';
import { commandFrame } from './publish-args.js';
import type { PublishData, PublishOutcome } from './publisher.js';
import { API_KEY_HEADER, STREAMS_PATH } from '../protocol/paths.js';

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const MAX_TRIES = 4;

export interface RestOptions {
  /** The longest wait for each reply, body included (default 30 s); not retried when it runs out. */
  timeoutMs?: number;
}

/**
 * `POST /v1/streams/{id}/post`. Retries a refused connection, 429 and 5xx
 * gateway errors a few times: the idempotency key makes a retry safe. Given
 * several addresses (instances of one service), each retry goes to the next,
 * and only a whole round of them failing waits before the next round.
 */
export async function publishRest(
  endpoint: Endpoint | readonly Endpoint[],
  apiKey: string | undefined,
  args: PublishData,
  options: RestOptions = {},
): Promise<PublishOutcome> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const endpoints = [endpoint].flat();
  const urls = endpoints.map((each) => `${each.httpBase}${STREAMS_PATH}/${encodeURIComponent(args.streamId)}/post`);
  const tries = Math.max(MAX_TRIES, urls.length);
  const { streamId: _inPath, ...body } = commandFrame(args).data;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== undefined) headers[API_KEY_HEADER] = apiKey;
  const retry = async (attempt: number) => {
    if (attempt % urls.length === 0)
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt / urls.length - 1)));
  };
  for (let attempt = 1; ; attempt++) {
    const url = urls[(attempt - 1) % urls.length]!;
    const signal = AbortSignal.timeout(timeoutMs);
    const timedOut = () => timeoutError(timeoutMs, `a reply to POST ${url}`);
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal });
    } catch (error) {
      if (signal.aborted) throw timedOut();
      if (attempt >= tries) {
        const where = urls.length === 1 ? url : `any of ${urls.join(', ')}`;
        throw new ClientError(
          'unreachable',
          `cannot reach ${where}: ${describeNetworkError((error as { cause?: Error & { code?: string } }).cause ?? (error as Error))}`,
        );
      }
      await retry(attempt);
      continue;
    }
    if (RETRY_STATUSES.has(response.status) && attempt < tries) {
      await response.body?.cancel();
      await retry(attempt);
      continue;
    }
    let payload: Record<string, unknown> = {};
    try {
      payload = (await response.json()) as Record<string, unknown>;
    } catch {
      if (signal.aborted) throw timedOut();
      // A proxy's HTML error page: the status says enough.
    }
    if (response.ok) {
      const post = parsePost(payload['post']);
      if (!post) throw new ClientError('refused', `${url} answered HTTP ${response.status} without a post`);
      return { ok: true, post, duplicate: payload['duplicate'] === true, attempts: attempt };
    }
    const error = (payload['error'] ?? {}) as { code?: unknown; message?: unknown };
    const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
    const message =
      typeof error.message === 'string' ? error.message : `HTTP ${response.status} ${response.statusText}`;
    if (response.status === 401)
      throw keyRefusedError({ by: 'reply', detail: `HTTP 401: ${message}` }, { status: 401 });
    return { ok: false, code, message, status: response.status };
  }
}
