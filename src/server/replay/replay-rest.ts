// REST requests answered from the recording: matched on method, path, query and body; the
// same request asked again gets the recorded answers in their order.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { RecordedBody, RecordedExchange } from '../../protocol/recording.js';
import { keyFromRequest, readBody, sendJson } from '../http-util.js';
import { MAX_MEDIA_BYTES } from '../http/media.js';
import type { Logger } from '../logger.js';
import {
  asRecorded,
  bindPlaceholders,
  bodyDifferences,
  closest,
  fitsRecorded,
  queryDifferences,
  bodyShown,
  type IgnoredFields,
} from './match.js';
import { bodyBytes, fillPlaceholders, type Rewrite } from './rewrite.js';
import type { Waits } from './waits.js';

/** Headers of a recorded answer that describe the recorded connection, not the answer: the replay's own are sent. */
export const HOP_HEADERS = new Set(['connection', 'content-length', 'date', 'keep-alive', 'transfer-encoding']);

export interface RestReplayContext {
  exchanges: readonly RecordedExchange[];
  ignored: IgnoredFields;
  logger: Logger;
  speed: number;
  waits: Waits;
  now: () => number;
  bodyTimeoutMs: number;
  rewrite: () => Rewrite;
  /** A request the recording does not answer: true hands it to the simulated service (false: 404). */
  unmatched(what: string): boolean;
}

/** What a live request is, as a recorded one would be written. */
interface LiveRequest {
  method: string;
  path: string;
  query: [string, string][];
  body: RecordedBody | undefined;
  key: string | undefined;
}

function bodyOf(bytes: Buffer, type: string | undefined): RecordedBody | undefined {
  if (bytes.length === 0) return undefined;
  const text = bytes.toString('utf8');
  if (Buffer.byteLength(text) !== bytes.length || text.includes('\uFFFD')) return { base64: bytes.toString('base64') };
  return type?.includes('json') ? asRecorded(text) : { text };
}

/** The request again, its body readable once more, for the simulated service. */
function withBody(req: IncomingMessage, bytes: Buffer): IncomingMessage {
  const again = Readable.from(bytes.length === 0 ? [] : [bytes]);
  return Object.assign(again, {
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    method: req.method,
    url: req.url,
    httpVersion: req.httpVersion,
    socket: req.socket,
    complete: true,
  }) as unknown as IncomingMessage;
}

export class RestReplay {
  readonly used = new Set<RecordedExchange>();
  readonly #context: RestReplayContext;

  constructor(context: RestReplayContext) {
    this.#context = context;
  }

  /** Where a live request differs from a recorded one (`[]`: it is the same). */
  #differ(recorded: RecordedExchange, live: LiveRequest): string[] {
    const found: string[] = [];
    if (recorded.method !== live.method) found.push('method');
    if (!fitsRecorded(recorded.request.path, live.path)) found.push('path');
    found.push(...queryDifferences(recorded.request.query, live.query));
    found.push(...bodyDifferences(recorded.request.body, live.body, this.#context.ignored, 'body'));
    return found;
  }

  /** Answers from the recording, or gives the request back (its body readable again) for the simulated service. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<IncomingMessage | undefined> {
    const context = this.#context;
    const bytes = await readBody(req, MAX_MEDIA_BYTES, context.bodyTimeoutMs);
    const live: LiveRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: [...url.searchParams],
      body: bodyOf(bytes, req.headers['content-type']),
      key: keyFromRequest(req, url),
    };
    const matching = context.exchanges.filter((exchange) => this.#differ(exchange, live).length === 0);
    // The same request asked again gets the next recorded answer; past the last, the last again.
    const exchange = matching.find((candidate) => !this.used.has(candidate)) ?? matching.at(-1);
    const hide = (text: string) => (live.key === undefined ? text : text.replaceAll(live.key, '[key]'));
    const asked = hide(`${live.method} ${url.pathname}${url.search}`);
    if (exchange === undefined) {
      if (context.unmatched(asked)) return withBody(req, bytes);
      this.#answerMiss(res, live, asked, hide);
      return undefined;
    }
    this.used.add(exchange);
    const bound = new Map<string, string>();
    bindPlaceholders(exchange.request.path, live.path, bound);
    exchange.request.query.forEach(([name, value]) => {
      const given = live.query.find(([liveName]) => liveName === name);
      if (given) bindPlaceholders(value, given[1], bound);
    });
    if (context.speed !== Infinity) await context.waits.until(context.now() + exchange.response.t / context.speed);
    const { status, headers, body } = exchange.response;
    const kept = Object.entries(headers).filter(([name]) => !HOP_HEADERS.has(name.toLowerCase()));
    const payload = bodyBytes(body, context.rewrite());
    const filled =
      body && !('base64' in body) ? Buffer.from(fillPlaceholders(payload.toString('utf8'), bound)) : payload;
    res.writeHead(status, { ...Object.fromEntries(kept), 'content-length': filled.length });
    res.end(filled);
    return undefined;
  }

  #answerMiss(res: ServerResponse, live: LiveRequest, asked: string, hide: (text: string) => string): void {
    const near = closest(this.#context.exchanges, (exchange) => this.#differ(exchange, live));
    const nearest = near && {
      id: near.best.id,
      request: `${near.best.method} ${near.best.request.path}${near.best.request.query.length > 0 ? '?' : ''}${new URLSearchParams(near.best.request.query).toString()}`,
      differs: near.differ,
      ...(near.differ.some((field) => field === 'body' || field.startsWith('body.'))
        ? { body: bodyShown(near.best.request.body) }
        : {}),
    };
    this.#context.logger.log('warn', 'replay: no recorded reply', {
      request: asked,
      closest: nearest?.request ?? '(the recording has no requests)',
      differs: nearest?.differs.join(', '),
      body: live.body === undefined ? undefined : bodyShown(live.body, hide),
    });
    sendJson(res, 404, {
      error: { code: 'not-found', message: `no recorded reply for ${asked}` },
      ...(nearest ? { closest: nearest } : {}),
    });
  }
}
