// The one place where every room (stores, service, ws, admin, graphql, http) is joined to the
// others, in the order the joins must happen: the store before the service, the service before
// the faults, REST and sessions, all of them before the HTTP front takes its first upgrade.
import { parseFault, type KeepAliveRound } from '../protocol/admin.js';
import { ProtocolError } from '../protocol/errors.js';
import { createAdminActions, createAdminHandler, type AdminActions } from './admin/admin.js';
import { answerLocally, spreadAdmin } from './admin/admin-peers.js';
import { Dashboard } from './admin/dashboard.js';
import { FaultRegistry } from './admin/faults.js';
import type { Scenario, ScenarioFaults } from './admin/scenario.js';
import { ScenarioPlayer, type PlayOptions } from './admin/scenario-player.js';
import { snapshotsOf, StateFile, stateDocument } from './admin/state-file.js';
import { AdjustableClock } from './clock.js';
import { DEFAULTS } from './defaults.js';
import { HttpFront } from './http/server.js';
import { isLoopbackName } from './http/perimeter.js';
import { createRestHandler } from './http/rest.js';
import { scrubSecrets, silentLogger, type Logger } from './logger.js';
import { Replay, type ReplayReport } from './replay/replay.js';
import { storeLimits, type ServerOptions } from './server-options.js';
import type { Seed } from './service/seed.js';
import { StreamPostsService } from './service/service.js';
import { SubscriptionService } from './service/subscriptions.js';
import { MemoryStore } from './stores/memory/memory-store.js';
import { DEFAULT_REDIS_PREFIX, redisUrlPassword } from './stores/redis/redis-keys.js';
import { seedDigest } from './stores/seed-catalog.js';
import { isShared, isSnapshotting, type Store } from './stores/store.js';
import { FanOut } from './ws/fanout.js';
import { KeyLimits } from './ws/key-limits.js';
import { TokenBucket } from './ws/rate-limiter.js';

export type { ServerOptions } from './server-options.js';

/** A scenario's fault steps, applied to and checked against this instance's faults. */
function scenarioFaultsOf(faults: FaultRegistry): ScenarioFaults {
  return {
    applyFault: (fault) => faults.add(fault),
    clearFaults: async () => faults.clear(undefined, 'scenario'),
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
}

/** The rate limits of a connection and of a key, as every transport applies them. */
function rateLimits(options: ServerOptions) {
  const rate = options.rateLimit ?? DEFAULTS.rateLimit;
  const timer = { now: () => performance.now() };
  const keyRate = options.keyRateLimit ?? (options.rateLimit === 0 ? 0 : DEFAULTS.keyRateLimit);
  const replyRate = rate || keyRate;
  return {
    createRateLimiter: rate === 0 ? undefined : () => new TokenBucket(rate, rate * 2, timer),
    createReplyBudget: replyRate === 0 ? undefined : () => new TokenBucket(replyRate, replyRate * 2, timer),
    // The per-connection limit the buckets enforce, stated so a client can pace itself.
    statedRateLimit: rate === 0 ? '' : `,"rateLimit":${JSON.stringify({ perSecond: rate, burst: rate * 2 })}`,
    keyLimits: new KeyLimits({
      ratePerSecond: keyRate,
      maxConnections: options.maxConnectionsPerKey ?? DEFAULTS.maxConnectionsPerKey,
      clock: timer,
    }),
  };
}

/** The service on one port, HTTP (REST, admin) and WebSocket; the library wraps it as `StreamPostsServer`. */
export class CoreServer {
  readonly clock: AdjustableClock;
  readonly store: Store;
  /** The admin endpoints' actions, callable in-process whether or not the HTTP admin is on. */
  readonly admin: AdminActions;
  readonly adminEnabled: boolean;
  /** Injected faults (admin): this instance's own, also with a shared store. */
  readonly faults: FaultRegistry;
  /** Fault injection for a scenario's fault steps; without it a scenario with fault steps is refused. */
  scenarioFaults: ScenarioFaults | undefined;
  readonly #logger: Logger;
  readonly #service: StreamPostsService;
  readonly #front: HttpFront;
  readonly #unsubscribeStore: () => void;
  readonly #stateFile: StateFile | undefined;
  /** The web dashboard at `/`, on with the admin endpoints. */
  readonly #dashboard: Dashboard | undefined;
  #player: ScenarioPlayer | undefined;
  #closing: Promise<void> | undefined;
  /** Settles when the first subscription goes live, on any transport. */
  readonly #firstSubscription: Promise<void>;
  #subscribed: () => void = () => {};
  /** The recording served back, when there is one. */
  readonly #replay: Replay | undefined;

  constructor(options: ServerOptions) {
    const host = options.host ?? DEFAULTS.host;
    this.adminEnabled = options.admin ?? (isLoopbackName(host) || options.adminToken !== undefined);
    // Clients can put a key anywhere (a requestId, a path); it is never logged.
    const secrets = [
      ...options.seed.users.map((user) => user.readerKey),
      ...options.seed.streams.map((stream) => stream.key),
      ...(options.adminToken === undefined ? [] : [options.adminToken]),
      ...(options.redis === undefined ? [] : [redisUrlPassword(options.redis.url) ?? '']),
    ];
    const logger = scrubSecrets(options.logger ?? silentLogger, secrets);
    this.#logger = logger;
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
            store: snapshotsOf(this.store),
            clock: this.clock,
            logger,
          });
    const service = new StreamPostsService(this.store);
    this.#service = service;
    this.#firstSubscription = new Promise((resolve) => {
      this.#subscribed = resolve;
    });
    const fanout = new FanOut();
    const stopEvents = this.store.onEvent((event) => fanout.dispatch(event));
    const shared = isShared(this.store) ? this.store : undefined;
    const stopInterrupts = shared?.onInterrupted(() => this.#front.dropSubscribers());
    this.#unsubscribeStore = () => {
      stopEvents();
      stopInterrupts?.();
    };

    const { createRateLimiter, createReplyBudget, statedRateLimit, keyLimits } = rateLimits(options);
    const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs;
    const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes;
    this.#replay =
      options.replay &&
      new Replay(options.replay, {
        clock: this.clock,
        logger,
        fanout,
        maxBufferedBytes,
        bodyTimeoutMs,
        connectionIdPrefix: options.instance?.name ?? '',
        faults: {
          refusal: (key) => this.faults.refusal(key),
          refusalBody: (status) => this.faults.refusalBody(status),
        },
        handOver: (ws, socket, key, url) => this.#front.adopt(ws, socket, key, url),
      });
    // Replayed connections are listed, closed and disturbed by faults as the simulated service's are.
    const connections = () =>
      this.#replay ? [...this.#front.sessions, ...this.#replay.connections] : this.#front.sessions;
    this.faults = new FaultRegistry({
      connections,
      authenticate: (key) => service.authenticate(key),
      logger,
      maxBufferedBytes,
      onChange: () => this.#dashboard?.events.notify('faults'),
    });
    this.scenarioFaults = scenarioFaultsOf(this.faults);
    const handleRest = createRestHandler({
      clock: this.clock,
      faults: this.faults,
      service,
      logger,
      createRateLimiter,
      keyLimits,
      bodyTimeoutMs,
      uploadWindowMs: options.uploadWindowMs ?? DEFAULTS.uploadWindowMs,
      media: this.store.media,
    });
    let admin = createAdminActions({
      store: this.store,
      clock: this.clock,
      logger,
      counts: () => ({ connections: this.connectionCount, subscriptions: fanout.size }),
      connections: () => [...connections()].map((connection) => connection.info()),
      faults: this.faults,
      keepAliveRound: () => this.#front.keepAliveRound(),
      ...this.#exportState(options.seed),
    });
    if (this.adminEnabled) {
      this.#dashboard = new Dashboard({
        seed: options.seed,
        store: this.store,
        clock: this.clock,
        token: options.adminToken,
        secure: options.tls !== undefined,
        subscribers: (streamId) => fanout.subscribersOf(streamId),
      });
      admin = this.#dashboard.watch(admin);
    }
    this.admin = admin;
    if (this.#replay)
      this.#replay.onOpen = (connection) => {
        this.faults.attach(connection);
        this.#dashboard?.events.notify('connections');
      };
    const { instance } = options;
    if (instance) {
      const local = {
        connections: () => admin.connections(),
        faults: this.faults,
        keepAliveRound: () => admin.keepAliveRound(),
      };
      instance.link.answer(async (request) => answerLocally(request, local));
    }
    this.#front = new HttpFront({
      host,
      port: options.port ?? DEFAULTS.port,
      tls: options.tls,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
      keepAliveMs: options.keepAliveMs ?? DEFAULTS.keepAliveMs,
      bodyTimeoutMs,
      headersTimeoutMs: options.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
      logger,
      session: {
        connectionIdPrefix: instance?.name ?? '',
        faults: this.faults,
        service,
        subscriptions: new SubscriptionService({
          service,
          fanout,
          keyLimits,
          maxSubscriptions: options.maxSubscriptions ?? DEFAULTS.maxSubscriptions,
          live: () => this.#subscribed(),
        }),
        fanout,
        logger,
        clock: this.clock,
        maxBufferedBytes,
        createRateLimiter,
        statedRateLimit,
        createReplyBudget,
        hostedHiddenPosts: options.hostedHiddenPosts ?? 'at-release',
        keyLimits,
        maxPendingCommands: options.maxPendingCommands ?? DEFAULTS.maxPendingCommands,
      },
      faults: this.faults,
      dashboard: this.#dashboard,
      handleRest,
      replay: this.#replay,
      handleAdmin: this.adminEnabled
        ? createAdminHandler(
            admin,
            { bodyTimeoutMs, token: options.adminToken },
            instance && spreadAdmin(instance.link, instance.name),
          )
        : undefined,
      unusable: () => (isShared(this.store) ? this.store.unusable() : undefined),
      onKeepAliveRound: shared && (() => shared.keepAliveRound()),
    });
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
        firstSubscription: this.#firstSubscription,
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

  /** Loads the state file (when there is one), then starts listening; resolves once the port is bound. */
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
      await this.#front.listen();
      this.#replay?.start(this.#front);
    } catch (error) {
      // A start that failed holds the state file no longer: a retry in this process may take it.
      await this.#stateFile?.close().catch(() => {});
      throw error;
    }
    return this;
  }

  /** One keep-alive round now (`POST /_admin/keep-alive`); the next timed one comes an interval later. */
  keepAliveRound(): Promise<KeepAliveRound> {
    return this.#front.keepAliveRound();
  }

  get port(): number {
    return this.#front.port;
  }

  /** `ws://host:port` (or `wss://`): the base URL clients are given. */
  get url(): string {
    return this.#front.url;
  }

  /** `http://host:port` (or `https://`): the REST origin. */
  get httpUrl(): string {
    return this.#front.httpUrl;
  }

  get connectionCount(): number {
    return this.#front.connectionCount + (this.#replay?.connections.size ?? 0);
  }

  /** What was used of the recording served back; undefined without one. */
  replayReport(): ReplayReport | undefined {
    return this.#replay?.report();
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
    this.#dashboard?.close();
    await Promise.all([this.#front.close(), this.#replay?.close()]);
    this.#unsubscribeStore();
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
  const { RedisStore } = await import('./stores/redis/redis-store.js');
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
