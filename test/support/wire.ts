import WebSocket from 'ws';
import { isPlainObject } from '../../src/protocol/objects.js';
import type { ServerAddress } from './harness.js';
// Evaluated before this module's body, so the harness's afterEach (closing
// servers) is registered before ours whatever order a test file imports them in.
import './harness.js';
import { Arrivals } from './arrivals.js';
import { forEachFile } from './file-hooks.js';

// With vitest's stacked hooks this runs before the harness closes the server:
// sockets that would never answer a close handshake are gone by then and do
// not hold up server.close() for its 2 s deadline.
const cleanups: (() => void)[] = [];

/** Runs `cleanup` after the test, before the harness closes the servers (a socket or a raw peer's end). */
export function dropAfterTest(cleanup: () => void): void {
  cleanups.push(cleanup);
}

forEachFile({
  afterEach() {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  },
});

/** One server message as received, parsed when it is a JSON object. */
export interface Received {
  /** performance.now() at arrival. */
  at: number;
  binary: boolean;
  /** The parsed frame, or undefined when the frame was not a JSON object. */
  message: Record<string, unknown> | undefined;
  /** The raw text; kept only when it did not parse (for failure messages). */
  raw?: string;
}

export interface CloseInfo {
  code: number;
  reason: string;
  at: number;
}

export interface WireClientOptions {
  /** Shrinks a message before it is kept (high-volume tests keep ids, not 16 KB texts). */
  summarize?: (message: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * A WebSocket client that records what the server sent, frame by frame
 * (text or binary, parsed or not), when pings arrived, and how it closed.
 */
export class WireClient {
  readonly received: Received[] = [];
  /** performance.now() of each ping the server sent. */
  readonly pings: number[] = [];
  readonly closed: Promise<CloseInfo>;
  #closeInfo: CloseInfo | undefined;
  readonly #arrivals = new Arrivals();

  constructor(
    readonly ws: WebSocket,
    options: WireClientOptions = {},
  ) {
    ws.on('message', (data, isBinary) => {
      const text = (data as Buffer).toString('utf8');
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const message = isPlainObject(parsed) ? (options.summarize?.(parsed) ?? parsed) : undefined;
      this.received.push({
        at: performance.now(),
        binary: isBinary,
        message,
        ...(message ? {} : { raw: text.slice(0, 200) }),
      });
      this.#arrivals.notify();
    });
    ws.on('ping', () => {
      this.pings.push(performance.now());
      this.#arrivals.notify();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.#closeInfo = { code, reason: reason.toString(), at: performance.now() };
        resolve(this.#closeInfo);
        this.#arrivals.notify();
      });
    });
    ws.on('error', () => {});
  }

  get isClosed(): boolean {
    return this.#closeInfo !== undefined;
  }

  /** Resolves once `ready()` is true; fails after `timeoutMs` (or at close, if `failOnClose`). */
  async until(ready: () => boolean, what: string, timeoutMs: number, failOnClose = true): Promise<void> {
    await this.#arrivals.until(
      () => {
        if (ready()) return true;
        if (failOnClose && this.#closeInfo)
          throw new Error(`closed (${JSON.stringify(this.#closeInfo)}) while waiting for ${what}`);
        return false;
      },
      timeoutMs,
      () => new Error(`timed out after ${timeoutMs} ms waiting for ${what}`),
    );
  }

  /** Index of the first received message at or after `from` that matches. */
  indexOf(match: (message: Record<string, unknown>) => boolean, from = 0): number {
    for (let i = from; i < this.received.length; i += 1) {
      const { message } = this.received[i]!;
      if (message && match(message)) return i;
    }
    return -1;
  }

  /** Waits for a message at or after `from` that matches; returns its index. */
  async waitFor(
    match: (message: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs: number,
    from = 0,
  ): Promise<number> {
    let index = -1;
    await this.until(() => (index = this.indexOf(match, from)) >= 0, what, timeoutMs);
    return index;
  }

  send(data: string | Buffer, binary = false): void {
    this.ws.send(data, { binary });
  }
}

/**
 * A `summarize` for connectWire that keeps what the checks read of a message (event,
 * requestId, the post's id, how many suggestions a tree item carries), not its text, so a
 * test that receives thousands of large posts stays small.
 */
export function summarize(message: Record<string, unknown>): Record<string, unknown> {
  const data = message['data'] as { id?: unknown; post?: { id?: unknown } } | undefined;
  const suggestions = message['suggestions'];
  return {
    event: message['event'],
    requestId: message['requestId'],
    id: data?.id ?? data?.post?.id ?? message['_id'],
    ...(Array.isArray(suggestions) ? { suggestions: suggestions.length } : {}),
  };
}

/** Ids of the posts a client received in one format (tree items carry no event), in arrival order. */
export function postIds(client: WireClient, format: 'envelope' | 'tree'): string[] {
  return client.received
    .filter((r) =>
      format === 'tree' ? r.message?.['event'] === undefined : r.message?.['event'] === 'stream.post.created',
    )
    .map((r) => String(r.message!['id']));
}

/** Opens a WebSocket to the server; with a key, waits for `connected`. */
export async function connectWire(
  server: ServerAddress,
  key: string,
  options: WireClientOptions & { path?: string; wsOptions?: WebSocket.ClientOptions } = {},
): Promise<WireClient> {
  // Our dialect, as the project's client asks for it (hidden posts pushed while hidden).
  const url = new URL(`${server.url}${options.path ?? '/v1/ws'}`);
  url.searchParams.set('hello', '1');
  const ws = new WebSocket(url, {
    headers: { 'x-api-key': key },
    ...options.wsOptions,
  });
  const client = new WireClient(ws, options);
  cleanups.push(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await client.waitFor((m) => m['event'] === 'connected', 'connected', 10_000);
  return client;
}

/** Sends a command with this requestId and waits for the reply carrying it. */
export async function request(
  client: WireClient,
  event: string,
  data: unknown,
  requestId: string,
  timeoutMs = 10_000,
): Promise<Record<string, unknown>> {
  const from = client.received.length;
  client.send(JSON.stringify({ event, data, requestId }));
  const index = await client.waitFor((m) => m['requestId'] === requestId, `reply to ${requestId}`, timeoutMs, from);
  return client.received[index]!.message!;
}
