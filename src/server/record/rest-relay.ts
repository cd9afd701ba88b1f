// One proxied REST request (reads, publishes, uploads): the body read whole within the
// service's limits, passed on, and the upstream's answer passed back as it came, both recorded.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readBody, sendError } from '../http-util.js';
import type { Logger } from '../logger.js';
import type { Recorder } from './recorder.js';
import { forwardedHeaders, type ProxyTrace } from './forwarding.js';
import { learnRequest, recordedHead, responseHeaders } from './handshake.js';

/** The largest body passed either way: an upload's media and a page of history fit. */
export const MAX_PROXIED_BODY = 32 * 1024 * 1024;

export interface RestRelayContext {
  recorder: Recorder;
  /** `http://host:port` or `https://…` of the upstream. */
  upstream: string;
  bodyTimeoutMs: number;
  trace: ProxyTrace | undefined;
  logger: Logger;
}

/** Reads an answer whole, up to the bound. */
function readAnswer(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PROXIED_BODY) res.destroy(new Error(`the upstream's answer is over ${MAX_PROXIED_BODY} bytes`));
      else chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('the upstream cut its answer short')));
  });
}

function forward(context: RestRelayContext, req: IncomingMessage, body: Buffer): Promise<[IncomingMessage, Buffer]> {
  const target = new URL(`${context.upstream}${req.url ?? '/'}`);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const out = send(target, { method: req.method, headers: forwardedHeaders(req.headers, 'request') }, (res) => {
      readAnswer(res).then((answer) => resolve([res, answer]), reject);
    });
    out.on('error', reject);
    out.end(body);
  });
}

/** Proxies one request and records the exchange; a body-reading error is the caller's to answer. */
export async function relayRequest(
  context: RestRelayContext,
  req: IncomingMessage,
  res: ServerResponse,
  traceId: number,
): Promise<void> {
  const { recorder } = context;
  const rawUrl = req.url ?? '/';
  learnRequest(recorder.secrets, new URL(rawUrl, 'http://proxy'), req.headers);
  const at = recorder.now();
  const method = req.method ?? 'GET';
  const trace = context.trace;
  const show = (direction: 'sent' | 'received', text: string) =>
    trace?.({ connection: traceId, direction, text: recorder.secrets.scrub(text) });
  const body = await readBody(req, MAX_PROXIED_BODY, context.bodyTimeoutMs);
  const kept = recorder.recording || trace !== undefined;
  // Kept first: a key in the body is learned before anything shows it.
  const requestBody = kept ? recorder.body('client', body) : undefined;
  show('sent', `${method} ${rawUrl}${body.length === 0 ? '' : ` ${body.toString('utf8')}`}`);
  let status: number;
  let headers: IncomingMessage['headers'];
  let answer: Buffer;
  try {
    const [upstreamRes, bytes] = await forward(context, req, body);
    status = upstreamRes.statusCode ?? 502;
    headers = upstreamRes.headers;
    answer = bytes;
    res.writeHead(status, upstreamRes.statusMessage, {
      ...forwardedHeaders(headers, 'response'),
      'content-length': String(answer.length),
    });
    res.end(answer);
  } catch (error) {
    status = 502;
    const message = `the upstream could not be reached: ${(error as Error).message}`;
    headers = { 'content-type': 'application/json; charset=utf-8' };
    answer = Buffer.from(JSON.stringify({ error: { code: 'unavailable', message } }));
    sendError(res, 'unavailable', message, 502);
  }
  context.logger.log('debug', 'proxied request', {
    method,
    path: recorder.secrets.scrub(rawUrl.split('?')[0]!),
    status,
  });
  if (!kept) return;
  // Kept first: an answer that hands out an upload address teaches its token before anything shows it.
  const responseBody = recorder.body('server', answer);
  show('received', `${status} ${method} ${rawUrl}${answer.length === 0 ? '' : ` ${answer.toString('utf8')}`}`);
  if (!recorder.recording) return;
  recorder.exchange(
    {
      at: Math.round(at),
      method,
      request: {
        ...recordedHead(recorder.secrets, rawUrl, req.headers),
        ...(requestBody ? { body: requestBody } : {}),
      },
      response: {
        t: Math.round(recorder.now() - at),
        status,
        headers: responseHeaders(recorder.secrets, headers),
        ...(responseBody ? { body: responseBody } : {}),
      },
    },
    body.length + answer.length,
  );
}
