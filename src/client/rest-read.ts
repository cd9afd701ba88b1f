import { API_KEY_HEADER } from '../protocol/paths.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, describeNetworkError, keyRefusedError, timeoutError } from './errors.js';

// A gateway's answers for an instance that is away: the next address may answer.
const NEXT_ADDRESS_STATUSES = new Set([502, 503, 504]);

/**
 * A REST request with the key in its header, on the first address that answers (an
 * unreachable one, or a 502-504, moves to the next); only for requests that are safe to
 * repeat (reads, and replacing a selection). Resolves with the parsed JSON body of a 2xx;
 * a refusal is a `refused` ClientError carrying the service's code (401: `unauthorized`).
 */
export async function requestJson(
  endpoints: readonly Endpoint[],
  apiKey: string,
  path: string,
  timeoutMs: number,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const method = body === undefined ? 'GET' : 'POST';
  const headers: Record<string, string> = { [API_KEY_HEADER]: apiKey };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const failures: string[] = [];
  for (const [index, endpoint] of endpoints.entries()) {
    const url = `${endpoint.httpBase}${path}`;
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      if (signal.aborted) throw timeoutError(timeoutMs, `a reply to ${method} ${url}`);
      const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
      failures.push(`${url}: ${describeNetworkError(cause)}`);
      continue;
    }
    if (NEXT_ADDRESS_STATUSES.has(response.status) && index < endpoints.length - 1) {
      await response.body?.cancel();
      failures.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    let parsed: unknown;
    try {
      parsed = await response.json();
    } catch {
      if (signal.aborted) throw timeoutError(timeoutMs, `a reply to ${method} ${url}`);
      // A proxy's HTML error page: the status says enough.
    }
    const payload = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
    if (response.ok) return payload;
    const error = (payload['error'] ?? {}) as { code?: unknown; message?: unknown };
    const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
    const message =
      typeof error.message === 'string' ? error.message : `HTTP ${response.status} ${response.statusText}`;
    if (response.status === 401)
      throw keyRefusedError({ by: 'reply', detail: `HTTP 401: ${message}` }, { status: 401 });
    throw new ClientError('refused', `${code}: ${message}`, code, { status: response.status });
  }
  throw new ClientError('unreachable', `cannot reach the service: ${failures.join('; ')}`);
}
