import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { queryToArgs, isCommandName } from '../protocol/commands.js';
import { encodeEvent } from '../protocol/events.js';
import { MAX_FRAME_BYTES } from '../protocol/limits.js';
import { redactUrl } from '../protocol/redact.js';
import { createAdminHandler } from './admin.js';
import { DEFAULTS } from './defaults.js';
import { AdjustableClock } from './clock.js';
import { FanOut } from './fanout.js';
import { keyFromRequest, sendError, sendJson } from './http-util.js';
import { silentLogger, type Logger } from './logger.js';
import { MemoryStore } from './memory-store.js';
import { TokenBucket } from './rate-limiter.js';
import { createRestHandler } from './rest.js';
import type { Seed } from './seed.js';
import { StreamPostsService } from './service.js';
import { CLOSE_GOING_AWAY, Session, type SessionContext, type SessionStart } from './session.js';
import type { Store } from './store.js';

export interface ServerOptions {
  seed: Seed;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  idempotencyWindowMs?: number;
  /** Commands per second per connection; 0 turns the limit off. Burst is twice this. */
  rateLimit?: number;
  /** Bytes queued for one subscriber before it is closed with 1013. */
  maxBufferedBytes?: number;
  keepAliveMs?: number;
  /** Defaults to on when bound to a loopback address. */
  admin?: boolean;
  logger?: Logger;
  clock?: AdjustableClock;
  /** Replaces the in-memory store (the clock and seed are then the store's business). */
  store?: Store;
}


const WS_PATH = '/v1/ws';
/** How long a peer has to answer the close handshake on shutdown before it is dropped. */
const CLOSE_DEADLINE_MS = 2000;
/** Sessions pinged per turn of the event loop in a keep-alive round. */
const KEEP_ALIVE_SLICE = 200;

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function positiveOption(name: string, value: number, allowZero = false): number {
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new RangeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${value}`);
  }
  return value;
}

/** Where a WebSocket upgrade goes: the plain endpoint, a URL-form command, or nowhere (404). */
function routeUpgrade(url: URL): SessionStart['urlCommand'] | 'plain' | undefined {
  const path = url.pathname.replace(/\/+$/, '');
  if (path === WS_PATH) return 'plain';
  if (!path.startsWith(`${WS_PATH}/`)) return undefined;
  const command = path.slice(WS_PATH.length + 1);
  return isCommandName(command) ? { event: command, args: queryToArgs(url.searchParams) } : undefined;
}

/** The embedded Stream Posts service: HTTP (REST, admin) and WebSocket on one port. */
export class StreamPostsServer {
  readonly clock: AdjustableClock;
  readonly store: Store;
  readonly #options: Required<Pick<ServerOptions, 'host' | 'port' | 'maxBufferedBytes' | 'keepAliveMs' | 'rateLimit'>> & {
    admin: boolean;
  };
  readonly #logger: Logger;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<Session>();
  readonly #fanout = new FanOut();
  readonly #service: StreamPostsService;
  readonly #secure: boolean;
  readonly #unsubscribeStore: () => void;
  #keepAliveTimer: NodeJS.Timeout | undefined;
  #nextSessionId = 1;
  #closing: Promise<void> | undefined;
  readonly #sessionContext: SessionContext;
  #address: AddressInfo | undefined;

  constructor(options: ServerOptions) {
    const host = options.host ?? DEFAULTS.host;
    const port = options.port ?? DEFAULTS.port;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`port must be 0-65535, got ${port}`);
    this.#options = {
      host,
      port,
      rateLimit: positiveOption('rateLimit', options.rateLimit ?? DEFAULTS.rateLimit, true),
      maxBufferedBytes: positiveOption('maxBufferedBytes', options.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes),
      keepAliveMs: positiveOption('keepAliveMs', options.keepAliveMs ?? DEFAULTS.keepAliveMs),
      admin: options.admin ?? isLoopback(host),
    };
    this.#logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? new AdjustableClock();
    this.store =
      options.store ??
      new MemoryStore({
        seed: options.seed,
        clock: this.clock,
        idempotencyWindowMs: positiveOption(
          'idempotencyWindowMs',
          options.idempotencyWindowMs ?? DEFAULTS.idempotencyWindowMs,
          true,
        ),
      });
    this.#service = new StreamPostsService(this.store);
    this.#unsubscribeStore = this.store.onEvent((event) => this.#fanout.dispatch(event));

    const rate = this.#options.rateLimit;
    const createRateLimiter =
      rate === 0 ? undefined : () => new TokenBucket(rate, rate * 2, { now: () => performance.now() });
    const handleRest = createRestHandler({ service: this.#service, logger: this.#logger, createRateLimiter });
    const handleAdmin = this.#options.admin
      ? createAdminHandler({
          store: this.store,
          clock: this.clock,
          logger: this.#logger,
          counts: () => ({ connections: this.#sessions.size, subscriptions: this.#fanout.size }),
        })
      : undefined;
    this.#sessionContext = {
      service: this.#service,
      fanout: this.#fanout,
      logger: this.#logger,
      maxBufferedBytes: this.#options.maxBufferedBytes,
      createRateLimiter,
    };

    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      this.#handleRequest(req, res, handleRest, handleAdmin).catch((error: unknown) => {
        this.#logger.log('error', 'internal error', { path: redactUrl(req.url ?? ''), reason: (error as Error).message });
        if (!res.headersSent) sendError(res, 'internal', 'the server failed to handle this request');
        else res.destroy();
      });
    };
    this.#secure = options.tls !== undefined;
    this.#http = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest)
      : createHttpServer(onRequest);
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, clientTracking: false });
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const route = routeUpgrade(url);
      if (route === undefined) {
        this.#logger.log('warn', 'upgrade to unknown path', { path: url.pathname });
        socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      if (this.#closing) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      socket.on('error', () => socket.destroy());
      // What the session needs is taken out now: a closure over `req` would keep the whole
      // upgrade request (headers, URL) alive for as long as the connection lasts.
      const key = keyFromRequest(req, url);
      const urlCommand = route === 'plain' ? undefined : route;
      this.#wss.handleUpgrade(req, socket, head, (ws: WebSocket) => this.#accept(ws, socket, key, urlCommand));
    });
    // Request bodies and idle keep-alive sockets must not hold the process open on close.
    this.#http.keepAliveTimeout = 5_000;
  }

  #accept(ws: WebSocket, socket: Duplex, key: string | undefined, urlCommand: SessionStart['urlCommand']): void {
    if (this.#closing) {
      // The handshake finished after shutdown began.
      ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      setTimeout(() => ws.terminate(), CLOSE_DEADLINE_MS).unref();
      return;
    }
    const start: SessionStart = { id: `c${this.#nextSessionId++}`, key };
    if (urlCommand) start.urlCommand = urlCommand;
    const session = new Session(ws, this.#sessionContext, start, socket);
    this.#sessions.add(session);
    session.onClosed(() => this.#sessions.delete(session));
  }

  async #handleRequest(
    req: IncomingMessage,
    res: ServerResponse,
    handleRest: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>,
    handleAdmin: ((req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>) | undefined,
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/healthz') {
      sendJson(res, 200, { ok: true });
      return;
    }
    if (await handleRest(req, res, url)) return;
    if (handleAdmin && (await handleAdmin(req, res, url))) return;
    if (routeUpgrade(url) !== undefined) {
      sendError(res, 'bad-request', 'this endpoint speaks WebSocket; send an Upgrade request', 426, { upgrade: 'websocket' });
      return;
    }
    sendError(res, 'not-found', `no endpoint ${req.method ?? ''} ${url.pathname}`, 404);
  }

  /** Starts listening; resolves once the port is bound. */
  async listen(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#http.once('error', reject);
      this.#http.listen(this.#options.port, this.#options.host, () => {
        this.#http.off('error', reject);
        resolve();
      });
    });
    this.#address = this.#http.address() as AddressInfo;
    const keepAliveFrame = Buffer.from(encodeEvent('keep-alive', {}));
    this.#keepAliveTimer = setInterval(() => this.#keepAlive(keepAliveFrame), this.#options.keepAliveMs);
    this.#keepAliveTimer.unref();
    return this;
  }

  /**
   * One keep-alive round, in slices of KEEP_ALIVE_SLICE sessions with I/O between them:
   * 10,000 pings in one go held deliveries up for tens of milliseconds.
   */
  #keepAlive(frame: Buffer, sessions = [...this.#sessions], from = 0): void {
    const to = Math.min(from + KEEP_ALIVE_SLICE, sessions.length);
    for (let i = from; i < to; i += 1) {
      const session = sessions[i]!;
      if (!session.isAlive) {
        this.#logger.log('warn', 'terminating unresponsive peer', { conn: session.id });
        session.terminate();
        continue;
      }
      session.ping(frame);
    }
    if (to < sessions.length && this.#closing === undefined) setImmediate(() => this.#keepAlive(frame, sessions, to));
  }

  get adminEnabled(): boolean {
    return this.#options.admin;
  }

  get port(): number {
    if (!this.#address) throw new Error('the server is not listening yet');
    return this.#address.port;
  }

  /** `ws://host:port` (or `wss://`): the base URL clients are given. */
  get url(): string {
    return `${this.#secure ? 'wss' : 'ws'}://${this.#hostForUrl()}:${this.port}`;
  }

  /** `http://host:port` (or `https://`): the REST origin. */
  get httpUrl(): string {
    return `${this.#secure ? 'https' : 'http'}://${this.#hostForUrl()}:${this.port}`;
  }

  #hostForUrl(): string {
    const host = this.#options.host;
    if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
    return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  }

  get connectionCount(): number {
    return this.#sessions.size;
  }

  /**
   * Stops accepting at once (new connections are refused, an upgrade on an HTTP connection
   * already open gets 503, a handshake already under way is closed with 1001), closes every
   * client with 1001, releases the store. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    if (this.#keepAliveTimer) clearInterval(this.#keepAliveTimer);
    const stopped = new Promise<void>((resolve) => this.#http.close(() => resolve()));
    const closing = [...this.#sessions].map(
      (session) =>
        new Promise<void>((resolve) => {
          session.onClosed(resolve);
          session.close(CLOSE_GOING_AWAY, 'server shutting down');
        }),
    );
    // A peer that does not answer the close handshake is dropped.
    const deadline = setTimeout(() => this.#sessions.forEach((session) => session.terminate()), CLOSE_DEADLINE_MS);
    await Promise.all(closing);
    clearTimeout(deadline);
    this.#unsubscribeStore();
    this.#http.closeAllConnections();
    await stopped;
    this.#wss.close();
    await this.store.close();
  }
}

/** Creates and starts a server in one step. */
export function startServer(options: ServerOptions): Promise<StreamPostsServer> {
  return new StreamPostsServer(options).listen();
}
