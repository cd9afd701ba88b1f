// The doctor's own way onto a service: raw WebSocket connections and REST requests, each
// bounded in time, each counted, each kept as an exchange for `--record`. It speaks the
// protocol by hand on purpose: a conformance run must see what the service sent, not what
// a forgiving client made of it.
import WebSocket from 'ws';
import type {
  Json,
  RecordedConnection,
  RecordedEvent,
  RecordedExchange,
  RecordedTransport,
} from '../protocol/recording.js';

/** Where a service lives, as the doctor reaches it. */
export interface Target {
  /** `ws(s)://host[:port][/prefix]`, no path: `/v1/ws`, `/graphql` go after it. */
  wsBase: string;
  /** `http(s)://host[:port][/prefix]`. */
  httpBase: string;
  /** The key every check presents. */
  apiKey: string;
  /** The longest wait for any one answer. */
  timeoutMs: number;
}

/** What the doctor sent and kept; one per service it talks to. */
export class Exchanges {
  framesSent = 0;
  requestsSent = 0;
  postsWritten = 0;
  readonly connections: RecordedConnection[] = [];
  readonly requests: RecordedExchange[] = [];
  readonly started = Date.now();
}

/** A frame the doctor received: its text, and its JSON when it is JSON. */
export interface Frame {
  text: string;
  json: unknown;
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/** The `event` of an envelope, or undefined for anything else (a tree item, a bare text). */
export const eventOf = (frame: Frame | undefined): string | undefined => {
  const json = frame?.json;
  return json !== null && typeof json === 'object' && typeof (json as { event?: unknown }).event === 'string'
    ? (json as { event: string }).event
    : undefined;
};

/** The `data` object of an envelope (empty when there is none). */
export const dataOf = (frame: Frame | undefined): Record<string, unknown> => {
  const data = (frame?.json as { data?: unknown } | undefined)?.data;
  return data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
};

/** The connection could not be made at all: no service answered at this address. */
export class Unreachable extends Error {
  override name = 'Unreachable';
}

function transportOf(path: string, query: URLSearchParams, protocol: string | undefined): RecordedTransport {
  if (protocol !== undefined) return 'graphql';
  if (query.get('format') === 'tree' || path.endsWith('on-stream-post-tree')) return 'tree';
  return path === '/v1/ws' ? 'ws' : 'url-form';
}

export interface OpenOptions {
  /** The path after the base: `/v1/ws`, `/v1/ws/on-stream-post`, `/graphql`. */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  protocol?: string;
}

/** One WebSocket connection of a check: frames as they came, waited on with a deadline. */
export class Wire {
  private readonly frames: Frame[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly record: RecordedConnection;
  private readonly opened = Date.now();
  private pongs = 0;
  closed: { code: number; reason: string } | undefined;
  refused: { status: number; body: string } | undefined;

  private constructor(
    private readonly socket: WebSocket | undefined,
    private readonly target: Target,
    private readonly log: Exchanges,
    record: RecordedConnection,
  ) {
    this.record = record;
  }

  /**
   * Opens a connection and waits for the upgrade: a Wire that is open, or one whose upgrade
   * was refused (`refused`). Throws Unreachable when nothing answered.
   */
  static async open(target: Target, log: Exchanges, options: OpenOptions): Promise<Wire> {
    const query = new URLSearchParams(options.query);
    const search = query.size > 0 ? `?${query}` : '';
    const record: RecordedConnection = {
      id: log.connections.length + 1,
      at: Date.now() - log.started,
      transport: transportOf(options.path, query, options.protocol),
      request: { path: options.path, query: [...query], headers: { ...options.headers } },
      ...(options.protocol === undefined ? {} : { subprotocol: options.protocol }),
      events: [],
    };
    log.connections.push(record);
    const socket = new WebSocket(`${target.wsBase}${options.path}${search}`, options.protocol, {
      headers: options.headers,
      handshakeTimeout: target.timeoutMs,
    });
    const wire = new Wire(socket, target, log, record);
    await wire.upgrade(socket);
    return wire;
  }

  private upgrade(socket: WebSocket): Promise<void> {
    return new Promise((resolve, reject) => {
      socket.on('unexpected-response', (_request, response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += body.length < 4096 ? chunk : ''));
        response.on('end', () => {
          this.refused = { status: response.statusCode ?? 0, body };
          this.record.refused = { status: this.refused.status, headers: {}, body: { text: body } };
          socket.terminate();
          resolve();
        });
        response.on('error', () => resolve());
      });
      socket.on('error', (error) => {
        if (this.refused === undefined && socket.readyState !== WebSocket.OPEN) reject(new Unreachable(error.message));
      });
      socket.on('open', () => {
        if (socket.protocol) this.record.subprotocol = socket.protocol;
        resolve();
      });
      socket.on('message', (data, isBinary) => {
        const text = isBinary ? '' : String(data);
        const frame = { text, json: parseJson(text) };
        this.frames.push(frame);
        this.note({ from: 'server', ...this.textEvent(text, frame.json) });
        this.wake();
      });
      socket.on('ping', () => this.note({ from: 'server', op: 'ping' }));
      socket.on('pong', () => {
        this.pongs += 1;
        this.note({ from: 'server', op: 'pong' });
        this.wake();
      });
      socket.on('close', (code, reason) => {
        this.closed = { code, reason: String(reason) };
        this.note({ from: 'server', op: 'close', code, reason: String(reason) });
        this.wake();
      });
    });
  }

  private textEvent(text: string, json: unknown) {
    return json === undefined ? { op: 'text' as const, text } : { op: 'text' as const, json: json as Json };
  }

  private note(event: Omit<RecordedEvent, 't'> & Record<string, unknown>): void {
    this.record.events.push({ t: Date.now() - this.opened, ...event } as RecordedEvent);
  }

  private wake(): void {
    for (const waiter of this.waiters) waiter();
  }

  get isOpen(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  send(text: string): void {
    if (!this.isOpen) return;
    this.log.framesSent += 1;
    this.note({ from: 'client', ...this.textEvent(text, parseJson(text)) });
    this.socket!.send(text);
  }

  sendJson(value: unknown): void {
    this.send(JSON.stringify(value));
  }

  /** Sends a WebSocket ping and waits for its pong. */
  async ping(): Promise<boolean> {
    if (!this.isOpen) return false;
    this.log.framesSent += 1;
    this.note({ from: 'client', op: 'ping' });
    const before = this.pongs;
    this.socket!.ping();
    return this.until(() => this.pongs > before || this.closed !== undefined).then(() => this.pongs > before);
  }

  /** The frames received so far. */
  get received(): readonly Frame[] {
    return this.frames;
  }

  /** Waits until `done()` holds or the deadline passes (or `ms`, shorter, for a quiet spell); says which. */
  until(done: () => boolean, ms = this.target.timeoutMs): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish(true);
      };
      const finish = (result: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(result);
      };
      const timer = setTimeout(() => finish(false), ms);
      this.waiters.add(check);
    });
  }

  /** The first frame from index `from` on that `test` accepts, waited for. */
  async next(test: (frame: Frame) => boolean = () => true, from = 0, ms?: number): Promise<Frame | undefined> {
    const find = () => this.frames.slice(from).find(test);
    await this.until(() => find() !== undefined || this.closed !== undefined, ms);
    return find();
  }

  /** Waits for the close (up to the deadline). */
  async closing(): Promise<{ code: number; reason: string } | undefined> {
    await this.until(() => this.closed !== undefined);
    return this.closed;
  }

  close(): void {
    if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close(1000);
  }
}

/** A REST answer: status and body (JSON when it was). */
export interface RestAnswer {
  status: number;
  json: unknown;
}

const bodyOf = (text: string, json: unknown) =>
  text === '' ? undefined : json === undefined ? { text } : { json: json as Json };

/** One REST request, bounded by the target's deadline, counted and kept. */
export async function rest(
  target: Target,
  log: Exchanges,
  method: string,
  path: string,
  options: { query?: Record<string, string>; body?: unknown; headers?: Record<string, string> } = {},
): Promise<RestAnswer> {
  const query = new URLSearchParams(options.query);
  const headers: Record<string, string> = { 'x-api-key': target.apiKey, ...options.headers };
  const text = options.body === undefined ? undefined : JSON.stringify(options.body);
  if (text !== undefined) headers['content-type'] = 'application/json';
  const started = Date.now();
  const exchange: RecordedExchange = {
    id: log.requests.length + 1,
    at: started - log.started,
    method,
    request: { path, query: [...query], headers, ...(text === undefined ? {} : { body: bodyOf(text, options.body)! }) },
    response: { t: 0, status: 0, headers: {} },
  };
  log.requests.push(exchange);
  log.requestsSent += 1;
  let response: Response;
  try {
    response = await fetch(`${target.httpBase}${path}${query.size > 0 ? `?${query}` : ''}`, {
      method,
      headers,
      ...(text === undefined ? {} : { body: text }),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (error) {
    throw new Unreachable(error instanceof Error ? error.message : String(error));
  }
  const answer = await response.text();
  const json = parseJson(answer);
  const type = response.headers.get('content-type');
  exchange.response = {
    t: Date.now() - started,
    status: response.status,
    headers: type === null ? {} : { 'content-type': type },
    ...(answer === '' ? {} : { body: bodyOf(answer, json)! }),
  };
  return { status: response.status, json };
}
