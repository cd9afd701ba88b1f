/**
 * Talking to `serve`: same-origin fetches, the admin token in an Authorization header.
 * The token arrives once in the URL fragment (`#token=…`, never sent to any server) or is
 * typed in; it is kept in this tab's sessionStorage only.
 */

const TOKEN_KEY = 'stream-posts-admin-token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let onUnauthorized: () => void = () => {};

export function whenUnauthorized(callback: () => void): void {
  onUnauthorized = callback;
}

/** Moves a `#token=` fragment into sessionStorage and out of the address bar and history. */
export function takeTokenFromFragment(): void {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!match) return;
  setToken(decodeURIComponent(match[1] ?? ''));
  history.replaceState(null, '', location.pathname + location.search);
}

export function setToken(token: string): void {
  if (token === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export function authHeaders(): Record<string, string> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** A JSON request; an error reply becomes an ApiError with the service's code and message. */
export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: {
      ...(path.startsWith('/_admin') ? authHeaders() : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? null : JSON.stringify(body),
    cache: 'no-store',
  });
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: reported below by status.
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    if (response.status === 401 && path.startsWith('/_admin')) onUnauthorized();
    throw new ApiError(
      response.status,
      error?.code ?? `http-${response.status}`,
      error?.message ?? response.statusText,
    );
  }
  return parsed as T;
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) return `${error.code} (${error.status}): ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
