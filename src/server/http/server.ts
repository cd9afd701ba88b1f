// http/: the HTTP server and what arrives on it: the perimeter (Host, Origin, TLS, timeouts),
// upgrades routed to WebSocket sessions or GraphQL, and requests routed to the dashboard, REST
// and admin handlers it is given. What those handlers and sessions are built from is joined
// in ../assemble.ts.
import {
  createServer as createHttpServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type Server as WebSocketServerOf } from 'ws';
import { queryToArgs, isCommandName } from '../../protocol/commands.js';
import type { KeepAliveRound } from '../../protocol/admin.js';
import { CLOSE_GOING_AWAY, CLOSE_SERVICE_RESTART } from '../../protocol/close-codes.js';
import { TREE_COMMAND } from '../../protocol/types.js';
import { MAX_FRAME_BYTES } from '../../protocol/limits.js';
import { HELLO_QUERY, TREE_FEED_ARGS, TREE_FEED_PATH, WS_PATH } from '../../protocol/paths.js';
import { loggedPath } from './media.js';
import {
  answerBodyError,
  keyFromRequest,
  requestTarget,
  sendError,
  sendJson,
  type RequestTarget,
} from '../http-util.js';
import type { Logger } from '../logger.js';
import { createPerimeter, type Refusal } from './perimeter.js';
import { KeepAlive, type KeepAlivePeer } from '../service/keep-alive.js';
import { ConnectionSocket } from '../ws/connection.js';
import { corkForThisTurn } from '../ws/outbound.js';
import { Session, type SessionContext, type SessionStart } from '../ws/session.js';
import type { createGraphqlEndpoint } from '../graphql/graphql-server.js';
import type { Unusable } from '../stores/store.js';

type GraphqlEndpoint = ReturnType<typeof createGraphqlEndpoint>;

/** A handler of some paths: false when the request is not one of its paths. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>;

/** What the front asks of the injected faults (admin/faults.ts) at an upgrade. */
export interface UpgradeFaults {
  /** A `refuse-connections` fault's status for this key, if one applies. */
  refusal(key: string | undefined): number | undefined | Promise<number | undefined>;
  refusalBody(status: number): string;
  attach(session: Session): void;
}

/** The web dashboard (admin/dashboard.ts): its paths, and the live feed told when connections come and go. */
export interface DashboardPage {
  handle: RequestHandler;
  events: { notify(notice: 'connections'): void };
}

/** A recording served back (replay/): what it answers, it answers before the simulated service. */
export interface ReplayFront {
  /** Takes an upgrade the recording answers (or refuses); false leaves it to the simulated service. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: RequestTarget): boolean;
  /** Answers a request from the recording, or gives it back (its body readable again) for the simulated service. */
  request(req: IncomingMessage, res: ServerResponse, url: URL): Promise<IncomingMessage | undefined>;
}

/** Everything the front serves, joined by ../assemble.ts; the options are checked already. */
export interface FrontParts {
  host: string;
  port: number;
  tls: { cert: string | Buffer; key: string | Buffer } | undefined;
  /** Host names and browser origins accepted besides loopback ones (perimeter.ts). */
  allowedHosts: readonly string[] | 'all';
  allowedOrigins: readonly string[];
  keepAliveMs: number;
  bodyTimeoutMs: number;
  headersTimeoutMs: number;
  logger: Logger;
  /** What every session is given; the front adds how a session tells it that it closed. */
  session: Omit<SessionContext, 'sessionClosed'>;
  faults: UpgradeFaults;
  dashboard: DashboardPage | undefined;
  handleRest: RequestHandler;
  handleAdmin: RequestHandler | undefined;
  replay?: ReplayFront | undefined;
  /** Why this instance cannot serve now (`GET /readyz`); undefined when it can. */
  unusable: () => Unusable | undefined;
  /** Run beside each keep-alive round's pings. */
  onKeepAliveRound: (() => Promise<void>) | undefined;
}

/** How long a peer has to answer the close handshake on shutdown before it is dropped. */
export const CLOSE_DEADLINE_MS = 2000;
/**
 * Node checks the header and request timeouts only this often (30 s by default), so a
 * client trickling its headers was held up to that much past the timeout.
 */
const HTTP_TIMEOUT_CHECKS = { connectionsCheckingInterval: 1_000 } as const;

/** What the address of an upgrade tells the session: its command, whether it is a tree feed, its dialect. */
type Route = Omit<SessionStart, 'seq' | 'key'>;
/** GraphQL subscriptions at `/graphql`: not a session of ours, but graphql-ws's. */
const GRAPHQL = 'graphql';

/** Where a WebSocket upgrade goes: the plain endpoint, a URL-form command, the tree feed, or nowhere (404). */
function routeUpgrade(url: RequestTarget): Route | typeof GRAPHQL | undefined {
  const path = url.pathname.endsWith('/') ? url.pathname.replace(/\/+$/, '') : url.pathname;
  const route: Route = {};
  // Our dialect, asked for by the project's own client; the hosted service ignores it (B1a).
  if (url.searchParams.get(HELLO_QUERY) === '1') route.hello = true;
  if (path === WS_PATH) return route;
  if (path === TREE_FEED_PATH) {
    // The same address without `format=tree` is GraphQL (PROTOCOL.md B7).
    if (url.searchParams.get('format') !== 'tree') return GRAPHQL;
    const args: Record<string, string> = {};
    for (const name of TREE_FEED_ARGS) {
      const value = url.searchParams.get(name);
      if (value !== null) args[name] = value;
    }
    return { ...route, urlCommand: { event: TREE_COMMAND, args }, treeOnly: true };
  }
  if (!path.startsWith(`${WS_PATH}/`)) return undefined;
  const command = path.slice(WS_PATH.length + 1);
  if (!isCommandName(command)) return undefined;
  route.urlCommand = { event: command, args: queryToArgs(url.searchParams) };
  // The hosted docs point Tree Terminal at the tree command's URL form: every message there is read as a tree item.
  if (command === TREE_COMMAND) route.treeOnly = true;
  return route;
}

/** The host of the URLs clients are given for a bound address: a wildcard bind is reached on loopback. */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** A socket's error listener: it ends the socket (shared, so no connection holds a closure for it). */
function destroySocket(this: Duplex): void {
  this.destroy();
}

/** A refusal on a socket that asked for an upgrade: plain HTTP, then the socket is closed. */
export function refuseUpgrade(socket: Duplex, status: number, statusText: string, body = ''): void {
  const type = body === '' ? '' : 'Content-Type: application/json; charset=utf-8\r\n';
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function refusalBody(refusal: Refusal): string {
  return JSON.stringify({ error: { code: 'forbidden', message: refusal.reason } });
}

/**
 * The service's front on one port: HTTP requests and WebSocket upgrades pass the perimeter
 * and are routed to what ../assemble.ts joined; it holds this instance's sessions and runs
 * their keep-alive rounds.
 */
export class HttpFront {
  readonly #options: Pick<FrontParts, 'host' | 'port' | 'keepAliveMs' | 'headersTimeoutMs'>;
  readonly #logger: Logger;
  readonly #http: Server;
  readonly #wss: WebSocketServerOf<typeof ConnectionSocket>;
  readonly #sessions = new Set<Session>();
  readonly faults: UpgradeFaults;
  readonly #secure: boolean;
  readonly #keepAlive: KeepAlive;
  #nextSessionId = 1;
  #closing: Promise<void> | undefined;
  readonly #sessionContext: SessionContext;
  #address: AddressInfo | undefined;
  /** The GraphQL endpoint, loaded by the first `/graphql` upgrade. */
  #graphql: Promise<GraphqlEndpoint> | undefined;
  /** The web dashboard at `/`, on with the admin endpoints. */
  readonly #dashboard: DashboardPage | undefined;
  readonly #unusable: () => Unusable | undefined;
  readonly #replay: ReplayFront | undefined;

  constructor(parts: FrontParts) {
    const { host, port, keepAliveMs, bodyTimeoutMs, headersTimeoutMs } = parts;
    this.#options = { host, port, keepAliveMs, headersTimeoutMs };
    this.#keepAlive = new KeepAlive({
      intervalMs: keepAliveMs,
      logger: parts.logger,
      peers: () => this.#keepAlivePeers(),
      onRound: parts.onKeepAliveRound,
    });
    const checkPerimeter = createPerimeter({
      bindHost: host,
      allowedHosts: parts.allowedHosts,
      allowedOrigins: parts.allowedOrigins,
    });
    this.#logger = parts.logger;
    this.faults = parts.faults;
    this.#dashboard = parts.dashboard;
    this.#unusable = parts.unusable;
    this.#replay = parts.replay;
    this.#sessionContext = {
      ...parts.session,
      sessionClosed: (session) => {
        this.#sessions.delete(session);
        this.#dashboard?.events.notify('connections');
      },
    };
    const { handleRest, handleAdmin } = parts;

    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const refusal = checkPerimeter(req.headers);
      if (refusal) {
        this.#logRefusal(req, refusal);
        sendError(res, 'forbidden', refusal.reason, refusal.status);
        return;
      }
      this.#handleRequest(req, res, handleRest, handleAdmin).catch((error: unknown) => {
        const path = loggedPath(req.url ?? '');
        if (answerBodyError(res, error)) {
          this.#logger.log('warn', 'request body not read', { path, reason: (error as Error).message });
          return;
        }
        this.#logger.log('error', 'internal error', { path, reason: (error as Error).message });
        if (!res.headersSent) sendError(res, 'internal', 'the server failed to handle this request');
        else res.destroy();
      });
    };
    this.#secure = parts.tls !== undefined;
    this.#http = parts.tls
      ? createHttpsServer({ cert: parts.tls.cert, key: parts.tls.key, ...HTTP_TIMEOUT_CHECKS }, onRequest)
      : createHttpServer(HTTP_TIMEOUT_CHECKS, onRequest);
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      clientTracking: false,
      WebSocket: ConnectionSocket,
    });
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const refusal = checkPerimeter(req.headers);
      if (refusal) {
        this.#logRefusal(req, refusal);
        refuseUpgrade(socket, refusal.status, 'Forbidden', refusalBody(refusal));
        return;
      }
      const url = requestTarget(req.url);
      if (!this.#closing && this.#replay?.upgrade(req, socket, head, url)) return;
      const route = routeUpgrade(url);
      if (route === undefined) {
        this.#logger.log('warn', 'upgrade to unknown path', { path: loggedPath(url.pathname) });
        refuseUpgrade(socket, 404, 'Not Found');
        return;
      }
      if (this.#closing) {
        refuseUpgrade(socket, 503, 'Service Unavailable');
        return;
      }
      // A function every socket shares, not a closure: one of this handler's would keep its scope
      // (the whole upgrade request, headers and URL: 1.4 KiB) alive as long as the connection.
      socket.on('error', destroySocket);
      // What the session needs is taken out now; no closure that outlives the handshake may capture `req` or `head`.
      const key = keyFromRequest(req, url);
      if (route === GRAPHQL) {
        this.#upgradeGraphql(req, socket, head, key);
        return;
      }
      const injected = this.faults.refusal(key);
      if (injected === undefined) this.#upgrade(req, socket, head, key, route);
      else this.#upgradeUnlessRefused(injected, req, socket, head, key, route);
    });
    // Request bodies and idle keep-alive sockets must not hold the process open on close.
    this.#http.keepAliveTimeout = 5_000;
    this.#http.headersTimeout = headersTimeoutMs;
    // A backstop for bodies no handler reads (a POST to an unknown path): handlers that
    // read one answer 408 themselves after bodyTimeoutMs.
    this.#http.requestTimeout = headersTimeoutMs + bodyTimeoutMs;
  }

  /**
   * A WebSocket opened elsewhere (a replay's, mid-way), served from now on as if it had opened
   * here; resolves once it is (GraphQL's endpoint may have to load first).
   */
  async adopt(ws: ConnectionSocket, socket: Duplex, key: string | undefined, url: RequestTarget): Promise<void> {
    const route = routeUpgrade(url);
    if (route === GRAPHQL) (await this.#graphqlEndpoint()).accept(ws, key);
    else if (route !== undefined) this.#accept(ws, socket, key, route);
  }

  #graphqlEndpoint(): Promise<GraphqlEndpoint> {
    const context = this.#sessionContext;
    this.#graphql ??= import('../graphql/graphql-server.js').then(({ createGraphqlEndpoint }) =>
      createGraphqlEndpoint({
        service: context.service,
        subscriptions: context.subscriptions,
        fanout: context.fanout,
        logger: this.#logger,
        keyLimits: context.keyLimits,
        createRateLimiter: context.createRateLimiter,
        maxBufferedBytes: context.maxBufferedBytes,
      }),
    );
    return this.#graphql;
  }

  /** Loads the GraphQL endpoint on its first use, then hands it the upgraded socket. */
  #upgradeGraphql(req: IncomingMessage, socket: Duplex, head: Buffer, key: string | undefined): void {
    this.#graphqlEndpoint().then(
      (endpoint) => {
        if (this.#closing) return refuseUpgrade(socket, 503, 'Service Unavailable');
        this.#wss.handleUpgrade(req, socket, head, (ws) => endpoint.accept(ws, key));
      },
      (error: unknown) => {
        this.#logger.log('error', 'internal error', { path: '/graphql', reason: (error as Error).message });
        refuseUpgrade(socket, 500, 'Internal Server Error');
      },
    );
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, key: string | undefined, route: Route): void {
    // Corked: the handshake's answer and `connected` (this turn's when the store answers at once) leave in one write.
    corkForThisTurn(socket);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, socket, key, route));
  }

  /** A `refuse-connections` fault's answer to an upgrade (none: the upgrade goes ahead). */
  #upgradeUnlessRefused(
    status: number | undefined | Promise<number | undefined>,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    key: string | undefined,
    route: Route,
  ): void {
    void Promise.resolve(status).then(
      (refused) => {
        if (refused === undefined) return this.#upgrade(req, socket, head, key, route);
        this.#logger.log('warn', 'upgrade refused by an injected fault', { status: refused });
        refuseUpgrade(socket, refused, STATUS_CODES[refused] ?? 'Refused', this.faults.refusalBody(refused));
      },
      () => this.#upgrade(req, socket, head, key, route),
    );
  }

  /** Events were missed: whoever subscribes must reconnect and replay; publishers keep their connection. */
  dropSubscribers(): void {
    const reason = 'the service lost events from its store; reconnect';
    for (const session of this.#sessions) if (session.subscribing) session.close(CLOSE_SERVICE_RESTART, reason);
    void this.#graphql?.then((endpoint) => endpoint.closeSubscribers(CLOSE_SERVICE_RESTART, reason));
  }

  /** This instance's WebSocket sessions (GraphQL connections are not among them). */
  get sessions(): ReadonlySet<Session> {
    return this.#sessions;
  }

  #logRefusal(req: IncomingMessage, refusal: Refusal): void {
    const origin = req.headers.origin;
    this.#logger.log('warn', 'request refused', {
      status: refusal.status,
      host: req.headers.host,
      origin: Array.isArray(origin) ? origin[0] : origin,
      path: loggedPath(req.url ?? '').split('?')[0],
    });
  }

  #accept(ws: ConnectionSocket, socket: Duplex, key: string | undefined, route: Route): void {
    if (this.#closing) {
      // The handshake finished after shutdown began.
      ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      setTimeout(() => ws.terminate(), CLOSE_DEADLINE_MS).unref();
      return;
    }
    // Every session's start has the same fields, in the same order: one shape for the code that reads them.
    const start: SessionStart = {
      seq: this.#nextSessionId++,
      key,
      urlCommand: route.urlCommand,
      treeOnly: route.treeOnly === true,
      hello: route.hello === true,
    };
    const session = new Session(ws, this.#sessionContext, start, socket);
    this.#sessions.add(session);
    this.faults.attach(session);
    this.#dashboard?.events.notify('connections');
  }

  async #handleRequest(
    given: IncomingMessage,
    res: ServerResponse,
    handleRest: RequestHandler,
    handleAdmin: RequestHandler | undefined,
  ): Promise<void> {
    let req = given;
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/healthz') {
      sendJson(res, 200, { ok: true });
      return;
    }
    // Liveness above; readiness here: whether this instance can serve (the load balancer's check).
    if (url.pathname === '/readyz') {
      const unusable = this.#unusable();
      if (unusable === undefined) sendJson(res, 200, { ready: true });
      else sendJson(res, 503, { ready: false, ...unusable });
      return;
    }
    if (this.#dashboard && (await this.#dashboard.handle(req, res, url))) return;
    if (this.#replay) {
      const passed = await this.#replay.request(req, res, url);
      if (passed === undefined) return;
      req = passed;
    }
    if (await handleRest(req, res, url)) return;
    if (handleAdmin && (await handleAdmin(req, res, url))) return;
    if (routeUpgrade(url) !== undefined) {
      sendError(res, 'bad-request', 'this endpoint speaks WebSocket; send an Upgrade request', 426, {
        upgrade: 'websocket',
      });
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
    this.#keepAlive.start();
    return this;
  }

  /**
   * One keep-alive round now (`POST /_admin/keep-alive`): a peer that has not answered the
   * previous round's ping is terminated, every other one gets a ping (and a `keep-alive`
   * event where it takes envelopes). Resolves once the round has reached every connection.
   */
  keepAliveRound(): Promise<KeepAliveRound> {
    return this.#keepAlive.round();
  }

  /** Every connection a keep-alive round pings: GraphQL's (few, once loaded) and the sessions. */
  async #keepAlivePeers(): Promise<Iterable<KeepAlivePeer>> {
    const graphql = await this.#graphql?.catch(() => undefined);
    return graphql ? [...graphql.peers(), ...this.#sessions] : this.#sessions;
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
    return hostForUrl(this.#options.host);
  }

  get connectionCount(): number {
    return this.#sessions.size;
  }

  /**
   * Stops accepting at once (new connections are refused, an upgrade on an HTTP connection
   * already open gets 503, a handshake already under way is closed with 1001), closes every
   * client with 1001. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#keepAlive.stop();
    if (this.#graphql) (await this.#graphql.catch(() => undefined))?.closeAll(CLOSE_GOING_AWAY, 'server shutting down');
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
    this.#http.closeAllConnections();
    await stopped;
    this.#wss.close();
  }
}
