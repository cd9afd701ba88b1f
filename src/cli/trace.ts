import type { TracedFrame } from '../index.js';
import { redactSecrets } from '../api/internal.js';
import { redactUrl } from '../protocol/redact.js';
import { formatTraceLine, type TraceDirection } from '../render/trace.js';

/** What `--trace` hands the client: each WebSocket frame, keys already cut out by the library. */
export type FrameTrace = (frame: TracedFrame) => void;

let fetchTraced = false;

/**
 * `--trace`: every frame and every REST request and reply on stderr, timed from the start of
 * the process (the command's start). The REST paths of the client (posting, streams,
 * history, names, the admin endpoints) all go through the global `fetch`, so it is wrapped
 * here, once, from outside, instead of each of them asking whether a trace is on.
 */
export function startTrace(secrets: readonly (string | undefined)[], stream: NodeJS.WritableStream = process.stderr) {
  const write = (direction: TraceDirection, text: string) =>
    stream.write(formatTraceLine(performance.now(), direction, redactSecrets(text, secrets)));
  if (!fetchTraced) {
    fetchTraced = true;
    globalThis.fetch = tracedFetch(globalThis.fetch, write);
  }
  const frames: FrameTrace = ({ direction, text }) => write(direction, text);
  return frames;
}

function requestBody(init: RequestInit | undefined): string {
  return typeof init?.body === 'string' ? ` ${init.body}` : '';
}

/** `fetch`, each request written as `> METHOD URL BODY` and its reply as `< STATUS METHOD URL BODY`. */
function tracedFetch(fetch: typeof globalThis.fetch, write: (direction: TraceDirection, text: string) => void) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const url = redactUrl(input instanceof Request ? input.url : String(input));
    write('sent', `${method} ${url}${requestBody(init)}`);
    let response: Response;
    try {
      response = await fetch(input, init);
    } catch (error) {
      write('received', `${method} ${url} failed: ${(error as Error).message}`);
      throw error;
    }
    // A copy of the body is read for the trace; the caller reads (or cancels) its own.
    response
      .clone()
      .text()
      .then(
        (body) => write('received', `${response.status} ${method} ${url}${body === '' ? '' : ` ${body}`}`),
        () => write('received', `${response.status} ${method} ${url} (body not read)`),
      );
    return response;
  };
}
