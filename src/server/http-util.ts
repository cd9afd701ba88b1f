import type { IncomingMessage, ServerResponse } from 'node:http';
import { HTTP_STATUS, ProtocolError, type ErrorCode } from '../protocol/errors.js';
import { API_KEY_HEADER, API_KEY_QUERY } from '../protocol/paths.js';

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(payload);
}

export function sendError(
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  status = HTTP_STATUS[code],
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

/** A path segment, decoded; a malformed escape is the caller's error, not ours. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ProtocolError('bad-request', 'the URL path has a malformed %-escape');
  }
}

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the request body is over ${limit} bytes`);
  }
}

/** The body did not arrive in time: a client that trickles (or stops) must not hold a socket. */
export class BodyTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the request body did not arrive within ${timeoutMs} ms`);
  }
}

/** The client went away mid-body: nobody is left to answer, and it is not the server's fault. */
export class BodyAbortedError extends Error {
  constructor() {
    super('the client closed the connection before the request body ended');
  }
}

/**
 * Reads a request body up to `limit` bytes within `timeoutMs`; stops reading as soon as
 * either is exceeded.
 */
export function readBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: Error | undefined) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (error) {
        req.pause();
        reject(error);
      } else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(new BodyTooLargeError(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(undefined);
    const onError = () => settle(new BodyAbortedError());
    const onClose = () => settle(req.complete ? undefined : new BodyAbortedError());
    const timer = setTimeout(() => settle(new BodyTimeoutError(timeoutMs)), timeoutMs);
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * Answers a request whose body could not be read: 413 over the limit, 408 too slow (and
 * the connection is closed, as the rest of that body is not worth waiting for). A client
 * that went away gets nothing. False when `error` is not a body error.
 */
export function answerBodyError(res: ServerResponse, error: unknown): boolean {
  if (error instanceof BodyTooLargeError) {
    refuseUnread(res, error.limit, 'invalid-argument', `the request body must be at most ${error.limit} bytes`, 413);
  } else if (error instanceof BodyTimeoutError) {
    sendError(res, 'bad-request', error.message, 408, { connection: 'close' });
  } else if (error instanceof BodyAbortedError) {
    res.destroy();
  } else return false;
  return true;
}

/**
 * Refuses a request without using its body. A client still sending its body when the answer
 * comes and the connection closes reads a reset, not the answer (fetch: "other side closed",
 * EPIPE). Up to `limit` + DRAIN_BYTES of it are read and dropped, so it reads the answer; a
 * body declared larger than that is not waited for.
 */
export function refuseUnread(
  res: ServerResponse,
  limit: number,
  code: ErrorCode,
  message: string,
  status = HTTP_STATUS[code],
): void {
  const declared = Number(res.req.headers['content-length']);
  const linger = !Number.isFinite(declared) || declared <= limit + DRAIN_BYTES;
  sendError(res, code, message, status, linger ? {} : { connection: 'close' });
  if (linger) dropRestOfBody(res.req);
}

/** What more of a refused body is read and dropped before the connection is closed instead. */
const DRAIN_BYTES = 16 * 1024 * 1024;
/** How long the rest of a refused body may take to arrive. */
const DRAIN_MS = 10_000;

/** Reads the rest of a refused request's body into nothing, within DRAIN_BYTES and DRAIN_MS. */
function dropRestOfBody(req: IncomingMessage): void {
  let dropped = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, DRAIN_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) cut();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** Parses a JSON body that must be an object. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch {
    throw new ProtocolError('bad-json', 'the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError('bad-request', 'the request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** What routing reads of a request's address. */
export interface RequestTarget {
  readonly pathname: string;
  /** Read only: an address without a query shares one empty set. */
  readonly searchParams: Pick<URLSearchParams, 'get' | 'has'> & Iterable<[string, string]>;
}

/** The query of every upgrade that has none (most of them): one set, never written to. */
const NO_QUERY = new URLSearchParams();

/** Letters, digits, `-`, `_` and single slashes: a path the URL parser would give back as it is. */
const PLAIN_PATH = /^(?:\/[\w-]+)*\/?$/;

/**
 * A request's path and query. The plain path every client sends is split at `?` without the
 * URL parser (a few microseconds on every upgrade); anything else (dots, escapes, `//`, a
 * fragment, an absolute form) goes through the parser, which normalizes it.
 */
export function requestTarget(raw = '/'): RequestTarget {
  const query = raw.indexOf('?');
  const path = query === -1 ? raw : raw.slice(0, query);
  if (!PLAIN_PATH.test(path) || raw.includes('#', query)) return new URL(raw, 'http://localhost');
  return { pathname: path, searchParams: query === -1 ? NO_QUERY : new URLSearchParams(raw.slice(query + 1)) };
}

/** The API key of a request: the `x-api-key` header, else the `apiKey` query parameter. */
export function keyFromRequest(req: IncomingMessage, url: RequestTarget): string | undefined {
  const header = req.headers[API_KEY_HEADER];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  // An empty header is no key at all, so a key in the query still counts.
  return fromHeader || url.searchParams.get(API_KEY_QUERY) || undefined;
}
