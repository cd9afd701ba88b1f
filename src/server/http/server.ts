// http/: the HTTP server and what arrives on it: the perimeter (Host, Origin, TLS, timeouts),
// upgrades routed to WebSocket sessions or GraphQL, REST, media uploads, admin and dashboard.
// Over 400 lines on purpose: the CoreServer constructor is the one place where every room
// (stores, service, ws, admin, graphql) is joined to the others; split, the order those joins
// must happen in (store before service before sessions, faults before the first upgrade) would
// be spread over files that each look complete alone.
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
import { WebSocketServer, type WebSocket } from 'ws';
import { queryToArgs, isCommandName } from '../../protocol/commands.js';
import { parseFault, type KeepAliveRound } from '../../protocol/admin.js';
import { ProtocolError } from '../../protocol/errors.js';
import { CLOSE_GOING_AWAY, CLOSE_SERVICE_RESTART } from '../../protocol/close-codes.js';
import { TREE_COMMAND } from '../../protocol/types.js';
import { MAX_FRAME_BYTES } from '../../protocol/limits.js';
import { HELLO_QUERY, TREE_FEED_ARGS, TREE_FEED_PATH, WS_PATH } from '../../protocol/paths.js';
import { redactUrl } from '../../protocol/redact.js';
import { createAdminActions, createAdminHandler, type AdminActions } from '../admin/admin.js';
import { answerLocally, spreadAdmin, type PeerLink } from '../admin/admin-peers.js';
import { DEFAULTS } from '../defaults.js';
import { Dashboard } from '../admin/dashboard.js';
import { AdjustableClock } from '../clock.js';
import { FanOut, type HiddenPosts } from '../ws/fanout.js';
import { FaultRegistry } from '../admin/faults.js';
import { KeyLimits } from '../ws/key-limits.js';
import {
  answerBodyError,
  keyFromRequest,
  requestTarget,
  sendError,
  sendJson,
  type RequestTarget,
} from './http-util.js';
import { scrubSecrets, silentLogger, type Logger } from '../logger.js';
import { MemoryStore } from '../stores/memory-store.js';
import { createPerimeter, isLoopbackName, type Refusal } from './perimeter.js';
import { TokenBucket } from '../ws/rate-limiter.js';
import { createRestHandler } from './rest.js';
import type { Seed } from '../service/seed.js';
import { StreamPostsService } from '../service/service.js';
import { SubscriptionService } from '../service/subscriptions.js';
import { KeepAlive, type KeepAlivePeer } from '../service/keep-alive.js';
import { StateFile, stateDocument } from '../admin/state-file.js';
import { seedDigest } from '../stores/seed-catalog.js';
import type { Scenario, ScenarioFaults } from '../admin/scenario.js';
import { ScenarioPlayer, type PlayOptions } from '../admin/scenario-player.js';
import { Session, type SessionContext, type SessionStart } from '../ws/session.js';
import type { createGraphqlEndpoint } from '../graphql/graphql-server.js';

type GraphqlEndpoint = ReturnType<typeof createGraphqlEndpoint>;
import { isShared, isSnapshotting, type Store } from '../stores/store.js';
import { DEFAULT_REDIS_PREFIX, redisUrlPassword } from '../stores/redis-keys.js';

/** startServer (src/api/server.ts) has checked these against serve's option table: the core trusts them. */
export interface ServerOptions {
  seed: Seed;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  idempotencyWindowMs?: number;
  /** How long an upload address (REST `uploadMedia`) takes uploads. */
  uploadWindowMs?: number;
  /** Commands per second per connection; 0 turns the limit off. Burst is twice this. */
  rateLimit?: number;
  /**
   * Commands and REST requests per second per key, over all its connections; burst twice
   * this; 0 turns it off. Defaults to off when `rateLimit` is 0, else to 400.
   */
  keyRateLimit?: number;
  /** Open connections per key; past it a connection gets `limit-exceeded` and close 1008. 0 = no cap. */
  maxConnectionsPerKey?: number;
  /** Subscriptions one connection may hold (a repeat of the same streams and format replaces its earlier one). 0 = no cap. */
  maxSubscriptionsPerConnection?: number;
  /** Commands one connection may have waiting for their turn; past it the connection is closed with 1008. */
  maxPendingCommands?: number;
  /** Hidden posts waiting for their release, per stream: a count and their text's bytes. 0 = no cap. */
  maxPendingReleasesPerStream?: number;
  maxPendingReleaseBytesPerStream?: number;
  /** idempotencyKeys remembered per stream within the window, and the text bytes of their posts. 0 = no cap. */
  maxIdempotencyKeysPerStream?: number;
  maxIdempotencyBytesPerStream?: number;
  /** Bytes queued for one subscriber before it is closed with 1013. */
  maxBufferedBytes?: number;
  keepAliveMs?: number;
  /** Defaults to on when bound to a loopback address or when `adminToken` is set. */
  admin?: boolean;
  /** When set, admin requests need `Authorization: Bearer <adminToken>`. Never logged. */
  adminToken?: string;
  /**
   * Host names accepted besides loopback names, IP addresses and `host` (a leading dot
   * allows subdomains); `'all'` accepts any Host, for serving behind a proxy.
   */
  allowedHosts?: readonly string[] | 'all';
  /** Browser origins accepted besides loopback ones (`http://localhost:5173` needs no entry); `'*'` accepts any. */
  allowedOrigins?: readonly string[];
  /** How long a request body may take to arrive before the request is answered 408. */
  bodyTimeoutMs?: number;
  /** How long request headers may take to arrive. */
  headersTimeoutMs?: number;
  logger?: Logger;
  /**
   * One of several instances acting as one service (serve --workers): its connection ids
   * start with `instance.name` (`w2-` gives `w2-c5`), and the admin endpoints about
   * connections, faults and keep-alive rounds answer for every instance through `link`.
   */
  instance?: { name: string; link: PeerLink };
  clock?: AdjustableClock;
  /** Replaces the in-memory store (the clock and seed are then the store's business). */
  store?: Store;
  /**
   * Keeps all state in Redis instead of this process, so several servers on one Redis act
   * as one service (`startServer` opens the store). `prefix` (default `stream-posts:`)
   * separates services sharing a Redis; `resetStore` replaces a keyspace holding another seed;
   * `allowEviction` starts on a Redis whose `maxmemory-policy` may evict keys (refused otherwise).
   */
  redis?: { url: string; prefix?: string; resetStore?: boolean; allowEviction?: boolean };
  /**
   * How a connection in the hosted dialect (no `hello=1`) gets a hidden post: `at-release`
   * (the default: once, at its release, as a new post with its text) or `push` (hidden at
   * creation, then `stream.post.released`, as our dialect does). PROTOCOL.md B1a.
   */
  hostedHiddenPosts?: HiddenPosts;
  /**
   * A file the memory store's state (posts, pending releases, idempotency keys, the clock's
   * offset) is loaded from at `listen()` and saved to (docs/state-and-scenarios.md).
   */
  state?: string;
}

const STORE_CAPS = [
  'maxPendingReleasesPerStream',
  'maxPendingReleaseBytesPerStream',
  'maxIdempotencyKeysPerStream',
  'maxIdempotencyBytesPerStream',
] as const;

/** What a store enforces, from the server's options (startServer has checked them). */
function storeLimits(
  options: ServerOptions,
): { idempotencyWindowMs: number } & Record<(typeof STORE_CAPS)[number], number> {
  const caps = Object.fromEntries(STORE_CAPS.map((name) => [name, options[name] ?? DEFAULTS[name]]));
  return {
    idempotencyWindowMs: options.idempotencyWindowMs ?? DEFAULTS.idempotencyWindowMs,
    ...(caps as Record<(typeof STORE_CAPS)[number], number>),
  };
}

/** How long a peer has to answer the close handshake on shutdown before it is dropped. */
const CLOSE_DEADLINE_MS = 2000;
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

/** A refusal on a socket that asked for an upgrade: plain HTTP, then the socket is closed. */
/** A socket's error listener: it ends the socket (shared, so no connection holds a closure for it). */
function destroySocket(this: Duplex): void {
  this.destroy();
}

function refuseUpgrade(socket: Duplex, status: number, statusText: string, body = ''): void {
  const type = body === '' ? '' : 'Content-Type: application/json; charset=utf-8\r\n';
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function refusalBody(refusal: Refusal): string {
  return JSON.stringify({ error: { code: 'forbidden', message: refusal.reason } });
}

/** The service on one port, HTTP (REST, admin) and WebSocket; the library wraps it as `StreamPostsServer`. */
export class CoreServer {
  readonly clock: AdjustableClock;
  readonly store: Store;
  /** The admin endpoints' actions, callable in-process whether or not the HTTP admin is on. */
  readonly admin: AdminActions;
  readonly #options: Required<
    Pick<
      ServerOptions,
      | 'host'
      | 'port'
      | 'maxBufferedBytes'
      | 'keepAliveMs'
      | 'rateLimit'
      | 'bodyTimeoutMs'
      | 'headersTimeoutMs'
      | 'uploadWindowMs'
    >
  > & {
    admin: boolean;
  };
  readonly #logger: Logger;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<Session>();
  readonly #fanout = new FanOut();
  /** Injected faults (admin): this instance's own, also with a shared store. */
  readonly faults: FaultRegistry;
  readonly #service: StreamPostsService;
  readonly #secure: boolean;
  readonly #unsubscribeStore: () => void;
  readonly #stateFile: StateFile | undefined;
  /** Fault injection for a scenario's fault steps; without it a scenario with fault steps is refused. */
  scenarioFaults: ScenarioFaults | undefined;
  #player: ScenarioPlayer | undefined;
  readonly #keepAlive: KeepAlive;
  #nextSessionId = 1;
  #closing: Promise<void> | undefined;
  readonly #sessionContext: SessionContext;
  #address: AddressInfo | undefined;
  /** The GraphQL endpoint, loaded by the first `/graphql` upgrade. */
  #graphql: Promise<GraphqlEndpoint> | undefined;
  /** The web dashboard at `/`, on with the admin endpoints. */
  readonly #dashboard: Dashboard | undefined;

  constructor(options: ServerOptions) {
    const host = options.host ?? DEFAULTS.host;
    const port = options.port ?? DEFAULTS.port;
    this.#options = {
      host,
      port,
      rateLimit: options.rateLimit ?? DEFAULTS.rateLimit,
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes,
      keepAliveMs: options.keepAliveMs ?? DEFAULTS.keepAliveMs,
      bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
      headersTimeoutMs: options.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
      uploadWindowMs: options.uploadWindowMs ?? DEFAULTS.uploadWindowMs,
      admin: options.admin ?? (isLoopbackName(host) || options.adminToken !== undefined),
    };
    const checkPerimeter = createPerimeter({
      bindHost: host,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
    });
    // Clients can put a key anywhere (a requestId, a path); it is never logged.
    const secrets = [
      ...options.seed.users.map((user) => user.readerKey),
      ...options.seed.streams.map((stream) => stream.key),
      ...(options.adminToken === undefined ? [] : [options.adminToken]),
      ...(options.redis === undefined ? [] : [redisUrlPassword(options.redis.url) ?? '']),
    ];
    this.#logger = scrubSecrets(options.logger ?? silentLogger, secrets);
    this.clock = options.clock ?? new AdjustableClock();
    this.store =
      options.store ??
      new MemoryStore({
        seed: options.seed,
        clock: this.clock,
        ...storeLimits(options),
        onChange: () => this.#stateFile?.changed(),
      });
    this.#stateFile =
      options.state === undefined
        ? undefined
        : new StateFile({
            file: options.state,
            seed: options.seed,
            store: this.store,
            clock: this.clock,
            logger: this.#logger,
          });
    this.#service = new StreamPostsService(this.store);
    const stopEvents = this.store.onEvent((event) => this.#fanout.dispatch(event));
    const stopInterrupts = isShared(this.store) ? this.store.onInterrupted(() => this.#dropSubscribers()) : undefined;
    this.#unsubscribeStore = () => {
      stopEvents();
      stopInterrupts?.();
    };

    const rate = this.#options.rateLimit;
    const timer = { now: () => performance.now() };
    const createRateLimiter = rate === 0 ? undefined : () => new TokenBucket(rate, rate * 2, timer);
    const keyRate = options.keyRateLimit ?? (options.rateLimit === 0 ? 0 : DEFAULTS.keyRateLimit);
    const keyLimits = new KeyLimits({
      ratePerSecond: keyRate,
      maxConnections: options.maxConnectionsPerKey ?? DEFAULTS.maxConnectionsPerKey,
      clock: timer,
    });
    const replyRate = rate || keyRate;
    const createReplyBudget = replyRate === 0 ? undefined : () => new TokenBucket(replyRate, replyRate * 2, timer);
    const { bodyTimeoutMs } = this.#options;
    this.faults = new FaultRegistry({
      connections: () => this.#sessions,
      authenticate: (key) => this.#service.authenticate(key),
      logger: this.#logger,
      maxBufferedBytes: this.#options.maxBufferedBytes,
      onChange: () => this.#dashboard?.events.notify('faults'),
    });
    this.scenarioFaults = {
      applyFault: (fault) => this.faults.add(fault),
      clearFaults: async () => this.faults.clear(undefined, 'scenario'),
      checkFault: (fault) => {
        try {
          parseFault(fault);
          return undefined;
        } catch (error) {
          if (error instanceof ProtocolError) return error.message;
          throw error;
        }
      },
    };
    const handleRest = createRestHandler({
      clock: this.clock,
      faults: this.faults,
      service: this.#service,
      logger: this.#logger,
      createRateLimiter,
      keyLimits,
      bodyTimeoutMs,
      uploadWindowMs: this.#options.uploadWindowMs,
      media: this.store.media,
    });
    this.admin = createAdminActions({
      store: this.store,
      clock: this.clock,
      logger: this.#logger,
      counts: () => ({ connections: this.#sessions.size, subscriptions: this.#fanout.size }),
      connections: () => [...this.#sessions].map((session) => session.info()),
      faults: this.faults,
      keepAliveRound: () => this.keepAliveRound(),
      ...this.#exportState(options.seed),
    });
    if (this.#options.admin) {
      this.#dashboard = new Dashboard({
        seed: options.seed,
        store: this.store,
        clock: this.clock,
        token: options.adminToken,
        secure: options.tls !== undefined,
        subscribers: (streamId) => this.#fanout.subscribersOf(streamId),
      });
      this.admin = this.#dashboard.watch(this.admin);
    }
    const { instance } = options;
    if (instance) {
      const local = {
        connections: () => this.admin.connections(),
        faults: this.faults,
        keepAliveRound: () => this.admin.keepAliveRound(),
      };
      instance.link.answer(async (request) => answerLocally(request, local));
    }
    const handleAdmin = this.#options.admin
      ? createAdminHandler(
          this.admin,
          { bodyTimeoutMs, token: options.adminToken },
          instance && spreadAdmin(instance.link, instance.name),
        )
      : undefined;
    this.#keepAlive = new KeepAlive({
      intervalMs: this.#options.keepAliveMs,
      logger: this.#logger,
      peers: () => this.#keepAlivePeers(),
    });
    this.#sessionContext = {
      connectionIdPrefix: instance?.name ?? '',
      faults: this.faults,
      service: this.#service,
      subscriptions: new SubscriptionService({
        service: this.#service,
        fanout: this.#fanout,
        keyLimits,
        maxSubscriptionsPerConnection: options.maxSubscriptionsPerConnection ?? DEFAULTS.maxSubscriptionsPerConnection,
      }),
      fanout: this.#fanout,
      logger: this.#logger,
      clock: this.clock,
      maxBufferedBytes: this.#options.maxBufferedBytes,
      createRateLimiter,
      // The per-connection limit the buckets above enforce, stated so a client can pace itself.
      statedRateLimit: rate === 0 ? '' : `,"rateLimit":${JSON.stringify({ perSecond: rate, burst: rate * 2 })}`,
      createReplyBudget,
      hostedHiddenPosts: options.hostedHiddenPosts ?? 'at-release',
      maxPendingCommands: options.maxPendingCommands ?? DEFAULTS.maxPendingCommands,
      sessionClosed: (session) => {
        this.#sessions.delete(session);
        this.#dashboard?.events.notify('connections');
      },
    };

    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const refusal = checkPerimeter(req.headers);
      if (refusal) {
        this.#logRefusal(req, refusal);
        sendError(res, 'forbidden', refusal.reason, refusal.status);
        return;
      }
      this.#handleRequest(req, res, handleRest, handleAdmin).catch((error: unknown) => {
        const path = redactUrl(req.url ?? '');
        if (answerBodyError(res, error)) {
          this.#logger.log('warn', 'request body not read', { path, reason: (error as Error).message });
          return;
        }
        this.#logger.log('error', 'internal error', { path, reason: (error as Error).message });
        if (!res.headersSent) sendError(res, 'internal', 'the server failed to handle this request');
        else res.destroy();
      });
    };
    this.#secure = options.tls !== undefined;
    this.#http = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key, ...HTTP_TIMEOUT_CHECKS }, onRequest)
      : createHttpServer(HTTP_TIMEOUT_CHECKS, onRequest);
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, clientTracking: false });
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const refusal = checkPerimeter(req.headers);
      if (refusal) {
        this.#logRefusal(req, refusal);
        refuseUpgrade(socket, refusal.status, 'Forbidden', refusalBody(refusal));
        return;
      }
      const url = requestTarget(req.url);
      const route = routeUpgrade(url);
      if (route === undefined) {
        this.#logger.log('warn', 'upgrade to unknown path', { path: url.pathname });
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
    this.#http.headersTimeout = this.#options.headersTimeoutMs;
    // A backstop for bodies no handler reads (a POST to an unknown path): handlers that
    // read one answer 408 themselves after bodyTimeoutMs.
    this.#http.requestTimeout = this.#options.headersTimeoutMs + bodyTimeoutMs;
  }

  /** Loads the GraphQL endpoint on its first use, then hands it the upgraded socket. */
  #upgradeGraphql(req: IncomingMessage, socket: Duplex, head: Buffer, key: string | undefined): void {
    const context = this.#sessionContext;
    this.#graphql ??= import('../graphql/graphql-server.js').then(({ createGraphqlEndpoint }) =>
      createGraphqlEndpoint({
        service: this.#service,
        subscriptions: context.subscriptions,
        fanout: this.#fanout,
        logger: this.#logger,
        createRateLimiter: context.createRateLimiter,
        maxBufferedBytes: context.maxBufferedBytes,
      }),
    );
    this.#graphql.then(
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

  #exportState(seed: Seed): { exportState?: () => object } {
    const store = this.store;
    if (!isSnapshotting(store)) return {};
    let fingerprint: string | undefined;
    return {
      exportState: () => stateDocument(store.exportSnapshot(), this.clock.offsetMs, (fingerprint ??= seedDigest(seed))),
    };
  }

  /** Starts playing a checked scenario (stepped: nothing runs until its `step()`); one at a time. */
  play(scenario: Scenario, options: PlayOptions = {}): ScenarioPlayer {
    if (this.#closing) throw new Error('the server is closing');
    if (this.#player && !this.#player.ended) throw new Error('a scenario is already playing; stop() it first');
    const player = new ScenarioPlayer(
      scenario,
      {
        service: this.#service,
        clock: this.clock,
        logger: this.#logger,
        advanceClock: (ms) => this.admin.advanceClock(ms),
        faults: this.scenarioFaults,
      },
      options,
    );
    this.#player = player;
    player.start();
    return player;
  }

  /** Events may have been missed: every client reconnects and replays what it lacks. */
  /** Events were missed: whoever subscribes must reconnect and replay; publishers keep their connection. */
  #dropSubscribers(): void {
    const reason = 'the service lost events from its store; reconnect';
    for (const session of this.#sessions) if (session.subscribing) session.close(CLOSE_SERVICE_RESTART, reason);
    void this.#graphql?.then((endpoint) => endpoint.closeSubscribers(CLOSE_SERVICE_RESTART, reason));
  }

  #logRefusal(req: IncomingMessage, refusal: Refusal): void {
    const origin = req.headers.origin;
    this.#logger.log('warn', 'request refused', {
      status: refusal.status,
      host: req.headers.host,
      origin: Array.isArray(origin) ? origin[0] : origin,
      path: redactUrl(req.url ?? '').split('?')[0],
    });
  }

  #accept(ws: WebSocket, socket: Duplex, key: string | undefined, route: Route): void {
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
    // Liveness above; readiness here: whether this instance can serve (the load balancer's check).
    if (url.pathname === '/readyz') {
      const unusable = isShared(this.store) ? this.store.unusable() : undefined;
      if (unusable === undefined) sendJson(res, 200, { ready: true });
      else sendJson(res, 503, { ready: false, ...unusable });
      return;
    }
    if (this.#dashboard && (await this.#dashboard.handle(req, res, url))) return;
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
    if (this.#stateFile) {
      const loaded = await this.#stateFile.open();
      this.#logger.log('info', loaded.restored ? 'state restored' : 'state file created', {
        file: this.#stateFile.file,
        posts: loaded.posts,
        pendingReleases: loaded.pendingReleases,
        idempotencyKeys: loaded.idempotencyKeys,
      });
    }
    try {
      await new Promise<void>((resolve, reject) => {
        this.#http.once('error', reject);
        this.#http.listen(this.#options.port, this.#options.host, () => {
          this.#http.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      // A start that failed holds the state file no longer: a retry in this process may take it.
      await this.#stateFile?.close().catch(() => {});
      throw error;
    }
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
    this.#player?.stop();
    this.#keepAlive.stop();
    this.#dashboard?.close();
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
    this.#unsubscribeStore();
    this.#http.closeAllConnections();
    await stopped;
    this.#wss.close();
    try {
      await this.#stateFile?.close();
    } finally {
      await this.store.close();
    }
  }
}

/** Creates and starts a server in one step (opening its Redis store first, when given one). */
export async function startServer(options: ServerOptions): Promise<CoreServer> {
  if (options.redis === undefined) return new CoreServer(options).listen();
  const clock = options.clock ?? new AdjustableClock();
  // Loaded only when asked for: the Redis client is most of a bundle no other command needs.
  const { RedisStore } = await import('../stores/redis-store.js');
  const store = await RedisStore.open({
    url: options.redis.url,
    prefix: options.redis.prefix ?? DEFAULT_REDIS_PREFIX,
    resetStore: options.redis.resetStore ?? false,
    allowEviction: options.redis.allowEviction ?? false,
    seed: options.seed,
    clock,
    ...storeLimits(options),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  try {
    return await new CoreServer({ ...options, clock, store }).listen();
  } catch (error) {
    await store.close();
    throw error;
  }
}
