import type { IncomingMessage, ServerResponse } from 'node:http';
import { HTTP_STATUS, ProtocolError, type ErrorCode } from '../protocol/errors.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
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

/** Reads a request body up to `limit` bytes; stops reading as soon as it is exceeded. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
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

/** The API key of a request: the `x-api-key` header, else the `apiKey` query parameter. */
export function keyFromRequest(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers['x-api-key'];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  // An empty header is no key at all, so a key in the query still counts.
  return fromHeader || url.searchParams.get('apiKey') || undefined;
}
