import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterEach } from 'vitest';
import WebSocket from 'ws';
import { ERROR_CODES } from '../../src/protocol/errors.js';
import { isPlainObject } from '../../src/protocol/objects.js';
import { COMMANDS } from '../../src/protocol/types.js';
import type { LogFields, LogLevel, Logger } from '../../src/server/logger.js';
import type { ServerAddress } from '../support/harness.js';
// Evaluated before this module's body, so the harness's afterEach (closing
// servers) is registered before ours whatever order a test file imports them in.
import '../support/harness.js';
import { Arrivals } from '../support/arrivals.js';

// With vitest's stacked hooks this runs before the harness closes the server:
// sockets that would never answer a close handshake are gone by then and do
// not hold up server.close() for its 2 s deadline.
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
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

// --- the server's log, with the time of each line -------------------------

export interface LogLine {
  at: number;
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/** A logger that keeps every line with performance.now(), and can call back on each. */
export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  readonly #listeners = new Set<(line: LogLine) => void>();

  log(level: LogLevel, message: string, fields: LogFields = {}): void {
    const line = { at: performance.now(), level, message, fields };
    this.lines.push(line);
    for (const listener of this.#listeners) listener(line);
  }

  onLine(listener: (line: LogLine) => void): void {
    this.#listeners.add(listener);
  }

  /** The server's id of the connection that most recently logged `connected`. */
  lastConnectedId(): string {
    const line = this.lines.findLast((entry) => entry.message === 'connected');
    if (!line || typeof line.fields['conn'] !== 'string') throw new Error('no connection has been logged');
    return line.fields['conn'];
  }

  find(message: string, conn: string): LogLine | undefined {
    return this.lines.find((line) => line.message === message && line.fields['conn'] === conn);
  }
}

// --- the server's end of a TCP connection -----------------------------------

/**
 * The server's own socket for a client connection (same process, found among
 * the process's active handles by its port pair). Its `writableLength` is what
 * the server has queued for that peer and the kernel has not taken: the
 * server-side `bufferedAmount` (ws adds its sender's queue, which stays empty
 * without permessage-deflate, off on this server).
 */
export function serverSideSocket(server: ServerAddress, clientSocket: net.Socket): net.Socket {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  const matches = handles.filter(
    (handle): handle is net.Socket =>
      handle instanceof net.Socket && handle.localPort === server.port && handle.remotePort === clientSocket.localPort,
  );
  if (matches.length !== 1) throw new Error(`expected one server-side socket, found ${matches.length}`);
  return matches[0]!;
}

/** The TCP socket under a `ws` client (not part of ws's typed API). */
export function tcpSocketOf(ws: WebSocket): net.Socket {
  return (ws as unknown as { _socket: net.Socket })._socket;
}

// --- a hand-made WebSocket peer on a raw TCP socket -------------------------

export const OPCODE = { text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** A client frame (masked, as RFC 6455 requires of clients), FIN set. */
export function clientFrame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0x80 | opcode, 0x80 | length])
      : length < 65536
        ? Buffer.from([0x80 | opcode, 0x80 | 126, length >> 8, length & 0xff])
        : (() => {
            const big = Buffer.alloc(10);
            big[0] = 0x80 | opcode;
            big[1] = 0x80 | 127;
            big.writeBigUInt64BE(BigInt(length), 2);
            return big;
          })();
  const mask = randomBytes(4);
  const masked = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) masked[i] = payload[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, mask, masked]);
}

/** The HTTP upgrade request of a WebSocket handshake. */
export function upgradeRequest(server: ServerAddress, key: string, path = '/v1/ws'): string {
  return [
    `GET ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${server.port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    `x-api-key: ${key}`,
    '',
    '',
  ].join('\r\n');
}

/** A raw TCP connection to the server; nothing is read from it until `readAll`. */
export async function rawConnect(server: ServerAddress): Promise<net.Socket> {
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => {});
  cleanups.push(() => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** Reads a raw socket to its end (or until `timeoutMs`), returning every byte. */
export function readAll(socket: net.Socket, timeoutMs: number): Promise<{ bytes: Buffer; ended: boolean }> {
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      resolve({ bytes: Buffer.concat(chunks), ended });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => finish(true));
    socket.resume();
  });
}

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/**
 * Splits what a raw peer received into the HTTP response head and the
 * server's frames (unmasked). A frame cut off by the end of the bytes is
 * reported as `truncated`, not as a frame.
 */
export function parseServerBytes(bytes: Buffer): { head: string; frames: ServerFrame[]; truncated: boolean } {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return { head: bytes.toString('latin1'), frames: [], truncated: bytes.length > 0 };
  const head = bytes.subarray(0, headEnd).toString('latin1');
  const frames: ServerFrame[] = [];
  let at = headEnd + 4;
  while (at < bytes.length) {
    if (bytes.length - at < 2) return { head, frames, truncated: true };
    const opcode = bytes[at]! & 0x0f;
    if (bytes[at + 1]! & 0x80) throw new Error('the server sent a masked frame');
    let length = bytes[at + 1]! & 0x7f;
    let headerLength = 2;
    if (length === 126) {
      if (bytes.length - at < 4) return { head, frames, truncated: true };
      length = bytes.readUInt16BE(at + 2);
      headerLength = 4;
    } else if (length === 127) {
      if (bytes.length - at < 10) return { head, frames, truncated: true };
      length = Number(bytes.readBigUInt64BE(at + 2));
      headerLength = 10;
    }
    if (bytes.length - at - headerLength < length) return { head, frames, truncated: true };
    frames.push({ opcode, payload: bytes.subarray(at + headerLength, at + headerLength + length) });
    at += headerLength + length;
  }
  return { head, frames, truncated: false };
}

// --- the shapes of PROTOCOL.md B3 --------------------------------------------

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const POST_FIELDS = [
  'contentType',
  'createdAt',
  'customTarget',
  'hidden',
  'id',
  'releaseAt',
  'streamId',
  'streamName',
  'text',
];

/**
 * Problems with a value that should be a Post of PROTOCOL.md B3; empty when it
 * is one. A delivered hidden post has neither text nor metadata; the publisher's ack always has them.
 */
export function postProblems(value: unknown, as: 'delivered' | 'ack' = 'delivered'): string[] {
  if (!isPlainObject(value)) return ['a post must be an object'];
  const problems: string[] = [];
  // `metadata` (a REST publisher's) is the one optional field.
  const keys = Object.keys(value)
    .filter((key) => key !== 'metadata')
    .sort();
  if (keys.join() !== POST_FIELDS.join()) problems.push(`post fields are ${keys.join()}`);
  const { metadata } = value;
  if (metadata !== undefined && metadata !== null && !isPlainObject(metadata))
    problems.push('metadata is not an object or null');
  const { id, streamId, streamName, text, contentType, createdAt, releaseAt, hidden, customTarget } = value;
  if (typeof id !== 'string' || !ULID.test(id)) problems.push(`id ${JSON.stringify(id)} is not a ULID`);
  if (typeof streamId !== 'string') problems.push('streamId is not a string');
  if (typeof streamName !== 'string') problems.push('streamName is not a string');
  if (text !== null && typeof text !== 'string') problems.push('text is not a string or null');
  if (contentType !== 'rawtext' && contentType !== 'markdown')
    problems.push(`contentType ${JSON.stringify(contentType)}`);
  if (typeof createdAt !== 'string' || !ISO_MS.test(createdAt)) problems.push(`createdAt ${JSON.stringify(createdAt)}`);
  if (releaseAt !== null && (typeof releaseAt !== 'string' || !ISO_MS.test(releaseAt))) {
    problems.push(`releaseAt ${JSON.stringify(releaseAt)}`);
  }
  if (typeof hidden !== 'boolean') problems.push('hidden is not a boolean');
  if (as === 'delivered' && hidden === true && text !== null) problems.push('a hidden post is delivered with text');
  if (as === 'delivered' && hidden === true && metadata !== null)
    problems.push('a hidden post is delivered without metadata: null');
  if (as === 'ack' && typeof text !== 'string') problems.push('an ack carries no text');
  if (customTarget !== null && typeof customTarget !== 'string') problems.push('customTarget is not a string or null');
  return problems;
}

/** Problems with an `error` event's envelope; empty when it is well formed. */
export function errorProblems(message: Record<string, unknown>): string[] {
  const data = message['data'];
  if (!isPlainObject(data)) return ['error data is not an object'];
  const problems: string[] = [];
  const extra = Object.keys(data).filter((key) => !['code', 'message', 'command'].includes(key));
  if (extra.length > 0) problems.push(`error data has unexpected fields ${extra.join()}`);
  if (!(ERROR_CODES as readonly unknown[]).includes(data['code']))
    problems.push(`error code ${JSON.stringify(data['code'])} is not in B5`);
  if (typeof data['message'] !== 'string' || data['message'].trim() === '')
    problems.push('error message is not a sentence');
  if ('command' in data && !(COMMANDS as readonly unknown[]).includes(data['command'])) {
    problems.push(`error command ${JSON.stringify(data['command'])} is not a command`);
  }
  return problems;
}

/** Problems with any envelope's top level (event, data, optional string requestId, nothing else). */
export function envelopeProblems(message: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const extra = Object.keys(message).filter((key) => !['event', 'data', 'requestId'].includes(key));
  if (extra.length > 0) problems.push(`envelope has unexpected fields ${extra.join()}`);
  if (typeof message['event'] !== 'string') problems.push('event is not a string');
  if (!('data' in message)) problems.push('envelope has no data');
  if ('requestId' in message && typeof message['requestId'] !== 'string') problems.push('requestId is not a string');
  return problems;
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
