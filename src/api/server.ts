// Over 400 lines on purpose: the library's public server surface (startServer's options, each
// checked with an error naming it, and the handle's documented methods); the work is in src/server/.
import { readFile } from 'node:fs/promises';
import type { AdminState, ConnectionInfo, Fault, FaultInput, KeepAliveRound } from '../protocol/admin.js';
import { ProtocolError } from '../protocol/errors.js';
import { DEMO_SEED } from '../demo/seed.js';
import { DEFAULTS } from '../server/defaults.js';
import type { Logger } from '../server/logger.js';
import type { Seed } from '../protocol/seed.js';
import { parseSeed, parseSeedText, SeedError, type SeedInput as ParsedSeedInput } from '../server/service/seed.js';
import { isValidToken, normalizeOrigin } from '../server/http/perimeter.js';
import {
  startServer as startCore,
  type ServerOptions as CoreOptions,
  type CoreServer as Core,
} from '../server/assemble.js';
import { checkRedisUrl } from '../server/stores/redis-keys.js';
import { StateFileError } from '../server/admin/state-file.js';
import { StateLockError } from '../server/admin/state-lock.js';
import type { StateDocument } from '../protocol/state.js';
import type { PlayOptions, ScenarioPlayer } from '../server/admin/scenario-player.js';
import { loadScenario, stepResult, type ScenarioPlayback, type ScenarioStepResult } from './scenario.js';
import { StreamPostsError } from './errors.js';
import {
  SERVE_OPTIONS,
  START_SERVER_OPTION_NAMES,
  STATE_NEEDS_MEMORY,
  type ServeOption,
  type ServeOptionName,
  type StartServerOptionName,
} from './serve-options.js';
import {
  checkKnownOptions,
  optionError,
  optionalBoolean,
  optionalInteger,
  optionalString,
  optionalStringList,
} from './options.js';

export type { Logger, LogLevel, LogFields } from '../server/logger.js';
export type { StateDocument } from '../protocol/state.js';
export type { ScenarioPlayback, ScenarioStepResult, ScenarioSummary } from './scenario.js';
/** A seed as written (docs/seed.md); fields with defaults may be left out. */
export interface SeedInput {
  users: {
    id: string;
    name: string;
    readerKey: string;
    follows?: string[];
    /** Per custom stream, the targets this user receives. */
    customTargets?: Record<string, string[]>;
  }[];
  streams?: {
    id: string;
    name: string;
    owner: string;
    key: string;
    custom?: boolean;
    customTargets?: string[];
    /** What `GET /v1/streams` shows and filters on (docs: seed format). */
    description?: string;
    label?: string;
    isFeatured?: boolean;
    packageOnly?: boolean;
    category?: string;
    state?: 'ACTIVE' | 'DRAFT';
    pricingType?: 'FREE' | 'PAID' | 'PACKAGE_ONLY';
    followers?: number;
    public?: boolean;
    customTargetsData?: Record<string, unknown>;
    paidStreamData?: Record<string, unknown>;
    createdAt?: string;
  }[];
  posts?: {
    streamId: string;
    content: string;
    contentType: 'rawtext' | 'markdown';
    createdAt?: string;
    customTarget?: string;
  }[];
}

// The hand-written type above is what users see; this keeps it in step with the schema.
const seedInputMatchesSchema: (seed: SeedInput) => ParsedSeedInput = (seed) => seed;
void seedInputMatchesSchema;

export interface StartServerOptions {
  /** A seed object, or the path of a seed JSON file. Default: the demo seed. */
  seed?: SeedInput | string;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 8787; 0 picks a free port (read it back from `server.url`). */
  port?: number;
  /** PEM certificate and key (contents, not paths): the server then speaks wss:// and https://. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** How long an idempotency key deduplicates, in ms. Default 600000 (10 min); 0 turns deduplication off. */
  idempotencyWindowMs?: number;
  /** How long an upload address (REST `uploadMedia`) takes uploads, in ms. Default 3600000 (1 hour). */
  uploadWindowMs?: number;
  /** Commands per second per connection (burst twice this). Default 200; 0 turns the limit off. */
  rateLimit?: number;
  /** Bytes queued for one subscriber before it is closed with 1013. Default 8 MiB. */
  maxBufferedBytes?: number;
  /** Interval of keep-alive events and pings, in ms. Default 30000. */
  keepAliveMs?: number;
  /** Commands and REST requests per second per key, all its connections together (burst twice this). Default 400, or 0 when `rateLimit` is 0; 0 turns it off. */
  keyRateLimit?: number;
  /** Open connections per key; past it a connection gets `limit-exceeded` and close 1008. Default 16; 0 = no cap. */
  maxConnectionsPerKey?: number;
  /** Subscriptions per connection. Default 64; 0 = no cap. */
  maxSubscriptions?: number;
  /** Commands one connection may have waiting for their turn before it is closed with 1008. Default 1000. */
  maxPendingCommands?: number;
  /** Hidden posts waiting for their releaseAt, per stream. Default 1000; 0 = no cap. */
  maxPendingReleases?: number;
  /** Text bytes of those hidden posts, per stream. Default 16 MiB; 0 = no cap. */
  maxPendingReleaseBytes?: number;
  /** Idempotency keys remembered per stream within the window. Default 10000; 0 = no cap. */
  maxIdempotencyKeys?: number;
  /** Text bytes of the posts those keys hold, per stream. Default 16 MiB; 0 = no cap. */
  maxIdempotencyBytes?: number;
  /** The HTTP `/_admin/*` endpoints. Default: on when bound to a loopback address or `adminToken` is set. The methods below work either way. */
  admin?: boolean;
  /** Admin requests then need `Authorization: Bearer <adminToken>` (printable ASCII, no spaces). */
  adminToken?: string;
  /** Host names accepted besides loopback names, IP addresses and `host` (`.example.com` for subdomains); `'all'` turns the check off. */
  allowedHosts?: readonly string[] | 'all';
  /** Browser origins accepted besides loopback ones, e.g. `https://app.example.com`; `'*'` accepts any. */
  allowedOrigins?: readonly string[];
  /** How long a request body may take to arrive (then 408), in ms. Default 10000. */
  bodyTimeoutMs?: number;
  /** How long request headers may take to arrive, in ms. Default 10000. */
  headersTimeoutMs?: number;
  /** Receives the server's log lines (never keys). Default: silent. */
  logger?: Logger;
  /**
   * Where state lives: `'memory'` (default), or `redis://[:password@]host:port[/db]`, whose
   * keyspace several servers share to act as one service.
   */
  store?: string;
  /** Prefix of every Redis key, so several services can share one Redis. Default `stream-posts:`. */
  redisPrefix?: string;
  /** Replace whatever the Redis keyspace holds (another seed, every post) with this seed. */
  resetStore?: boolean;
  /**
   * Start on a Redis whose `maxmemory-policy` may evict keys (anything but `noeviction`),
   * which is refused otherwise (`store-evicts`): posts Redis evicts are lost.
   */
  allowEviction?: boolean;
  /**
   * A file that keeps the memory store's posts, pending releases, idempotency keys and clock
   * offset across restarts: loaded at start when it exists, saved a second after a change and
   * at `close()`. A file that cannot be used rejects with `invalid-state`; one that another live
   * process holds (one writer per file, a lock held until `close()`) with `state-locked`. Not
   * with a Redis store.
   */
  state?: string;
  /**
   * How a client that did not ask for our dialect (`hello=1`) gets a hidden post, as the
   * hosted service's clients expect: `'at-release'` (default) once at its release, as a new
   * post with its text; `'push'` hidden at creation and then `stream.post.released`, so an
   * author can test a client against that too.
   */
  hostedHiddenPosts?: 'at-release' | 'push';
}

/** Where the core server's name for an option differs from startServer's. */
const CORE_NAMES: Partial<Record<ServeOptionName, keyof CoreOptions>> = {
  maxSubscriptions: 'maxSubscriptionsPerConnection',
  maxPendingReleases: 'maxPendingReleasesPerStream',
  maxPendingReleaseBytes: 'maxPendingReleaseBytesPerStream',
  maxIdempotencyKeys: 'maxIdempotencyKeysPerStream',
  maxIdempotencyBytes: 'maxIdempotencyBytesPerStream',
};

/** The numeric options, each with the core's name for it and the range the table gives. */
const NUMBER_OPTIONS = START_SERVER_OPTION_NAMES.flatMap((name) => {
  const option: ServeOption = SERVE_OPTIONS[name];
  if (option.min === undefined || option.max === undefined) return [];
  const core = CORE_NAMES[name] ?? (name as keyof CoreOptions);
  return [{ name, core, min: option.min, max: option.max }];
});

// Both ways: a new startServer option needs its row in the table, and a row marked api its option here.
const sameNames: [StartServerOptionName] extends [keyof StartServerOptions]
  ? [keyof StartServerOptions] extends [StartServerOptionName]
    ? true
    : never
  : never = true;
void sameNames;

/** The Redis store option of the core server, or none for the memory store. */
function redisOption(given: Record<string, unknown>): {
  redis?: { url: string; prefix?: string; resetStore: boolean; allowEviction: boolean };
} {
  const store = optionalString(given, 'store') ?? 'memory';
  const prefix = optionalString(given, 'redisPrefix');
  const resetStore = optionalBoolean(given, 'resetStore') ?? false;
  const allowEviction = optionalBoolean(given, 'allowEviction') ?? false;
  if (store === 'memory') {
    if (prefix !== undefined || resetStore || allowEviction)
      throw new TypeError('redisPrefix, resetStore and allowEviction need store: a redis:// URL');
    return {};
  }
  checkRedisUrl(store);
  return { redis: { url: store, ...(prefix === undefined ? {} : { prefix }), resetStore, allowEviction } };
}

/** What `state()` reports (the same as `GET /_admin/state`). */
export type ServerState = AdminState;
export type {
  ConnectionInfo,
  Fault,
  FaultInput,
  FaultScope,
  FaultScopeView,
  KeepAliveRound,
} from '../protocol/admin.js';

/** Injected faults (the same as `/_admin/faults`): this server's own, also with a Redis store. */
export interface ServerFaults {
  /**
   * Injects a fault; resolves to it as the server holds it, with its `id` (a one-shot
   * `close` or `send-frame` has acted before this resolves, and says on how many connections
   * in `applied`). A bad fault throws TypeError naming the field.
   */
  add(fault: FaultInput): Promise<Fault>;
  /** The faults in force. */
  list(): Fault[];
  /** Clears one fault, or every one without an id; returns how many were cleared (0: no fault with that id). */
  clear(id?: string): number;
}

/** The seed's keys: `readers[userId]` and `streams[streamId]`. */
export interface ServerKeys {
  readers: Readonly<Record<string, string>>;
  streams: Readonly<Record<string, string>>;
}

// Ten years, as the admin endpoint allows.
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

async function loadSeed(seed: unknown): Promise<Seed> {
  if (seed === undefined) return DEMO_SEED;
  try {
    if (typeof seed === 'string') {
      let text: string;
      try {
        text = await readFile(seed, 'utf8');
      } catch (error) {
        throw new StreamPostsError(
          'invalid-seed',
          `cannot read the seed file ${seed}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
          { cause: error, path: 'seed' },
        );
      }
      return parseSeedText(text);
    }
    if (seed === null || typeof seed !== 'object')
      throw new TypeError(
        `seed must be a seed object or the path of a seed file, got ${seed === null ? 'null' : typeof seed}`,
      );
    return parseSeed(seed);
  } catch (error) {
    if (error instanceof SeedError) {
      const where = typeof seed === 'string' ? `invalid seed file ${seed}` : 'invalid seed';
      throw new StreamPostsError('invalid-seed', `${where}: ${error.message}`, { cause: error, path: error.path });
    }
    throw error;
  }
}

function checkTls(value: unknown): StartServerOptions['tls'] {
  if (value === undefined) return undefined;
  const tls = value as Record<string, unknown> | null;
  const isPem = (part: unknown) => typeof part === 'string' || Buffer.isBuffer(part);
  if (tls === null || typeof tls !== 'object' || !isPem(tls['cert']) || !isPem(tls['key'])) {
    throw optionError('type', 'tls', 'tls must be { cert, key } with the PEM contents as strings or Buffers');
  }
  return { cert: tls['cert'] as string | Buffer, key: tls['key'] as string | Buffer };
}

function checkLogger(value: unknown): Logger | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof (value as Logger).log !== 'function')
    throw optionError('type', 'logger', 'logger must be an object with a log(level, message, fields) method');
  return value as Logger;
}

function checkPerimeter(
  given: Record<string, unknown>,
): Pick<CoreOptions, 'adminToken' | 'allowedHosts' | 'allowedOrigins'> {
  const adminToken = optionalString(given, 'adminToken');
  if (adminToken !== undefined && !isValidToken(adminToken)) {
    throw optionError('range', 'adminToken', 'adminToken must be one line of printable ASCII without spaces');
  }
  const allowedHosts = given['allowedHosts'] === 'all' ? 'all' : optionalStringList(given, 'allowedHosts', " or 'all'");
  const allowedOrigins = optionalStringList(given, 'allowedOrigins');
  for (const origin of allowedOrigins ?? []) {
    try {
      normalizeOrigin(origin);
    } catch (error) {
      throw optionError('type', 'allowedOrigins', `allowedOrigins: ${(error as Error).message}`, error);
    }
  }
  return {
    ...(adminToken === undefined ? {} : { adminToken }),
    ...(allowedHosts === undefined ? {} : { allowedHosts }),
    ...(allowedOrigins === undefined ? {} : { allowedOrigins }),
  };
}

/** The core's start, with a state file that cannot be used as the library's `invalid-state` error, or one in use as `state-locked`. */
async function startCoreWithState(options: CoreOptions): Promise<Core> {
  try {
    return await startCore(options);
  } catch (error) {
    if (error instanceof StateFileError) throw new StreamPostsError('invalid-state', error.message, { cause: error });
    if (error instanceof StateLockError) throw new StreamPostsError('state-locked', error.message, { cause: error });
    throw error;
  }
}

/** The embedded service, started by `startServer`. */
export class StreamPostsServer {
  readonly #core: Core;
  readonly #keys: ServerKeys;
  readonly faults: ServerFaults;
  readonly #seed: Seed;
  #player: ScenarioPlayer | undefined;

  /** @internal */
  constructor(core: Core, seed: Seed) {
    this.#core = core;
    const admin = core.admin;
    this.faults = Object.freeze({
      async add(fault: FaultInput): Promise<Fault> {
        try {
          return await admin.addFault(fault);
        } catch (error) {
          if (error instanceof ProtocolError) throw new TypeError(`faults.add: ${error.message}`);
          throw error;
        }
      },
      list: () => admin.faults(),
      clear(id?: string): number {
        if (id !== undefined && typeof id !== 'string') throw new TypeError('faults.clear: id must be a string');
        return admin.clearFaults(id);
      },
    });
    this.#seed = seed;
    this.#keys = Object.freeze({
      readers: Object.freeze(Object.fromEntries(seed.users.map((user) => [user.id, user.readerKey]))),
      streams: Object.freeze(Object.fromEntries(seed.streams.map((stream) => [stream.id, stream.key]))),
    });
  }

  /** `ws://host:port` (`wss://` with tls): give it to `connect({ url })`. */
  get url(): string {
    return this.#core.url;
  }

  /** `http://host:port` (`https://` with tls): the REST origin. */
  get httpUrl(): string {
    return this.#core.httpUrl;
  }

  /** `http://host:port/_admin`, or undefined when the HTTP admin endpoints are off. */
  get adminUrl(): string | undefined {
    return this.#core.adminEnabled ? `${this.#core.httpUrl}/_admin` : undefined;
  }

  get port(): number {
    return this.#core.port;
  }

  /** Keys of the seed's readers and streams. A getter, so that printing the server prints no keys. */
  get keys(): ServerKeys {
    return this.#keys;
  }

  /**
   * Moves the service's clock forward. Before the promise resolves, every
   * release now due has been sent to subscribers and idempotency keys older
   * than the window have expired.
   */
  async advanceClock(ms: number): Promise<{ now: string; clockOffsetMs: number }> {
    if (typeof ms !== 'number') throw new TypeError(`advanceClock: ms must be a number, got ${typeof ms}`);
    if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_ADVANCE_MS) {
      throw new RangeError(`advanceClock: ms must be an integer from 0 to ${MAX_ADVANCE_MS}, got ${ms}`);
    }
    return this.#core.admin.advanceClock(ms);
  }

  /** Back to the seed: posts, scheduled releases and idempotency keys are dropped; connections and subscriptions stay. */
  reset(): Promise<void> {
    return this.#core.admin.reset();
  }

  state(): Promise<ServerState> {
    return this.#core.admin.state();
  }

  /**
   * One keep-alive round now (the same as `POST /_admin/keep-alive`), as if the interval had
   * passed: a connection that left the last round's ping unanswered is terminated, every
   * other one gets a ping and a `keep-alive` event. Resolves, once the round has reached
   * every connection, to how many were pinged and terminated. The next timed round comes a
   * whole `keepAliveMs` later. So a test of a client's keep-alive needs no waiting: start
   * with a long `keepAliveMs` and drive the rounds.
   */
  keepAliveRound(): Promise<KeepAliveRound> {
    return this.#core.admin.keepAliveRound();
  }

  /** The open WebSocket connections (the same as `GET /_admin/connections`): who, subscribed to what. */
  connections(): ConnectionInfo[] {
    return this.#core.admin.connections();
  }

  /**
   * The memory store's state as `GET /_admin/export` answers it (and a state file holds it):
   * posts, pending releases, idempotency keys as digests, the clock offset; never a key.
   */
  async exportState(): Promise<StateDocument> {
    return (await this.#core.admin.exportState()) as StateDocument;
  }

  /**
   * Plays a scenario (docs/state-and-scenarios.md): an array of steps, or the path of a JSON or
   * NDJSON scenario file. Every step is checked first: a bad one rejects with
   * `invalid-scenario` naming the step (or line) and field, and nothing plays. `speed` runs it
   * faster than real time; `stepped: true` runs nothing until `step()`.
   */
  async play(scenario: readonly object[] | string, options: PlayOptions = {}): Promise<ScenarioPlayback> {
    const parsed = await loadScenario(scenario, this.#seed, this.#core.scenarioFaults);
    const player = this.#core.play(parsed, options);
    this.#player = player;
    return { steps: parsed.steps.length, done: player.done, stop: () => player.stop() };
  }

  /** Runs the next step of the scenario played with `stepped: true`; resolves to undefined when none is left. */
  async step(): Promise<ScenarioStepResult | undefined> {
    if (!this.#player?.stepped) throw new TypeError('step() needs a scenario played with { stepped: true }');
    const outcome = await this.#player.step();
    return outcome === undefined ? undefined : stepResult(outcome);
  }

  /** Open WebSocket connections now; unlike `state()` it needs no store, so it also answers while closing. */
  get connectionCount(): number {
    return this.#core.connectionCount;
  }

  /** Stops accepting, closes every connection with 1001, and resolves when all is released. Idempotent. */
  close(): Promise<void> {
    return this.#core.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Starts the service in this process; resolves once the port is bound.
 * Bad options throw TypeError/RangeError naming the option; a bad seed
 * rejects with StreamPostsError `invalid-seed` whose `path` names the field;
 * a port in use rejects with Node's own error (`code` EADDRINUSE).
 */
export function startServer(options: StartServerOptions = {}): Promise<StreamPostsServer> {
  return startInstance(options, undefined);
}

/**
 * startServer for one of several instances acting as one service (`serve --workers`): its
 * name prefixes its connection ids, and its admin endpoints reach the others through the link.
 * Not part of the package's API (left out of its published types).
 * @internal
 */
export async function startInstance(
  options: StartServerOptions,
  instance: CoreOptions['instance'],
): Promise<StreamPostsServer> {
  const given = checkKnownOptions('startServer', options, START_SERVER_OPTION_NAMES);
  const core: Partial<Record<keyof CoreOptions, unknown>> = {};
  for (const { name, core: coreName, min, max } of NUMBER_OPTIONS) {
    const value = optionalInteger(given, name, min, max);
    if (value !== undefined) core[coreName] = value;
  }
  const host = optionalString(given, 'host');
  const admin = optionalBoolean(given, 'admin');
  const tls = checkTls(given['tls']);
  const logger = checkLogger(given['logger']);
  const perimeter = checkPerimeter(given);
  const store = redisOption(given);
  const state = optionalString(given, 'state');
  const hostedHiddenPosts = optionalString(given, 'hostedHiddenPosts');
  if (hostedHiddenPosts !== undefined && hostedHiddenPosts !== 'at-release' && hostedHiddenPosts !== 'push') {
    throw optionError(
      'type',
      'hostedHiddenPosts',
      `hostedHiddenPosts must be 'at-release' or 'push', got '${hostedHiddenPosts}'`,
    );
  }
  if (state !== undefined && store.redis !== undefined) {
    throw optionError('type', 'state', `state ${STATE_NEEDS_MEMORY}`);
  }
  const seed = await loadSeed(given['seed']);
  const server = await startCoreWithState({
    ...(state === undefined ? {} : { state }),
    ...(hostedHiddenPosts === undefined ? {} : { hostedHiddenPosts }),
    ...(core as Partial<CoreOptions>),
    ...store,
    seed,
    host: host ?? DEFAULTS.host,
    port: (core.port as number | undefined) ?? DEFAULTS.port,
    ...(tls ? { tls } : {}),
    ...(admin === undefined ? {} : { admin }),
    ...perimeter,
    ...(logger ? { logger } : {}),
    ...(instance ? { instance } : {}),
  });
  return new StreamPostsServer(server, seed);
}
