// startServer's options: their types as users see them, and each checked with an error naming
// it (docs/api.md, "Bad options"), turned into the core server's options.
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { DEMO_SEED } from '../server/service/demo-seed.js';
import type { Seed } from '../protocol/seed.js';
import { STATE_NEEDS_MEMORY } from '../protocol/state.js';
import { DEFAULTS } from '../server/defaults.js';
import type { Logger } from '../server/logger.js';
import type { ProxiedFrame } from '../server/record/forwarding.js';
import type { SharedServerOptions } from '../server/shared-options.js';
import { parseSeed, parseSeedText, SeedError, type SeedInput as ParsedSeedInput } from '../server/service/seed.js';
import { isValidToken, normalizeOrigin } from '../server/http/perimeter.js';
import type { ServerOptions as CoreOptions } from '../server/assemble.js';
import { checkRedisUrl } from '../server/stores/redis/redis-keys.js';
import { StreamPostsError } from './errors.js';
import { replaySettings, type ReplayOptions } from './replay-options.js';
import {
  SERVE_OPTIONS,
  START_SERVER_OPTION_NAMES,
  type ServeOption,
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

/**
 * What `startServer` takes. Beside the options the core server takes alike (documented once, in
 * SharedServerOptions), a seed as written or its file, and where state lives.
 */
export interface StartServerOptions extends SharedServerOptions, ReplayOptions {
  /** A seed object, or the path of a seed JSON file. Default: the demo seed. */
  seed?: SeedInput | string;
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
   * Be a recording proxy instead of the simulated service (docs/record-replay.md): everything is
   * passed to `upstream` and recorded, keys replaced, into this file on `close()`. startServer
   * then resolves to a `RecordingServer`.
   */
  record?: string;
  /** With `record`: the service's origin (`wss://host`, or any serve's `ws://127.0.0.1:8787`). */
  upstream?: string;
  /** With `record`: bytes recorded before recording stops (proxying goes on). Default 100 MiB. */
  recordMaxBytes?: number;
  /** With `record`: connections and requests passed on at once. Default 1000. */
  recordMaxConnections?: number;
  /** With `record`: JSONPaths of more fields to replace (`$..author`). */
  recordRedact?: readonly string[];
  /** With `record`: told each proxied frame and request, keys replaced by their placeholders. */
  onProxiedFrame?: (frame: ProxiedFrame) => void;
}

/** The numeric options, each with the range the table gives (the core takes them under the same names). */
const NUMBER_OPTIONS = START_SERVER_OPTION_NAMES.flatMap((name) => {
  const option: ServeOption = SERVE_OPTIONS[name];
  if (option.min === undefined || option.max === undefined) return [];
  return [{ name: name as keyof SharedServerOptions & StartServerOptionName, min: option.min, max: option.max }];
});

// Both ways: a new startServer option needs its row in the table, and a row marked api its option here.
const sameNames: [StartServerOptionName] extends [keyof StartServerOptions]
  ? [keyof StartServerOptions] extends [StartServerOptionName]
    ? true
    : never
  : never = true;
void sameNames;

/**
 * A `store` that is neither `memory` nor a redis:// URL: a bad option (its message never shows a password).
 * @internal
 */
export function checkStoreUrl(store: string): void {
  try {
    checkRedisUrl(store);
  } catch (error) {
    throw optionError('type', 'store', (error as Error).message, error);
  }
}

/** The Redis store option of the core server, or none for the memory store. */
function redisOption(given: Record<string, unknown>): {
  redis?: { url: string; prefix?: string; resetStore: boolean; allowEviction: boolean };
} {
  const store = optionalString(given, 'store') ?? 'memory';
  const prefix = optionalString(given, 'redisPrefix');
  const resetStore = optionalBoolean(given, 'resetStore') ?? false;
  const allowEviction = optionalBoolean(given, 'allowEviction') ?? false;
  if (store === 'memory') {
    const needsRedis =
      prefix !== undefined ? 'redisPrefix' : resetStore ? 'resetStore' : allowEviction ? 'allowEviction' : '';
    if (needsRedis !== '')
      throw optionError('type', needsRedis, 'redisPrefix, resetStore and allowEviction need store: a redis:// URL');
    return {};
  }
  checkStoreUrl(store);
  return { redis: { url: store, ...(prefix === undefined ? {} : { prefix }), resetStore, allowEviction } };
}

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
      throw optionError(
        'type',
        'seed',
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

/** @internal */
export function checkTls(value: unknown): StartServerOptions['tls'] {
  if (value === undefined) return undefined;
  const tls = value as Record<string, unknown> | null;
  const isPem = (part: unknown) => typeof part === 'string' || Buffer.isBuffer(part);
  if (tls === null || typeof tls !== 'object' || !isPem(tls['cert']) || !isPem(tls['key'])) {
    throw optionError('type', 'tls', 'tls must be { cert, key } with the PEM contents as strings or Buffers');
  }
  const checked = { cert: tls['cert'] as string | Buffer, key: tls['key'] as string | Buffer };
  try {
    createSecureContext(checked);
  } catch (error) {
    // OpenSSL's words: not PEM, a key that is not the certificate's, …
    throw optionError('type', 'tls', `tls: cannot use the certificate and key: ${(error as Error).message}`, error);
  }
  return checked;
}

/** @internal */
export function checkLogger(value: unknown): Logger | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof (value as Logger).log !== 'function')
    throw optionError('type', 'logger', 'logger must be an object with a log(level, message, fields) method');
  return value as Logger;
}

/** @internal */
export function checkPerimeter(
  given: Record<string, unknown>,
): Pick<CoreOptions, 'adminToken' | 'allowedHosts' | 'allowedOrigins'> {
  const adminToken = optionalString(given, 'adminToken');
  if (adminToken !== undefined && !isValidToken(adminToken)) {
    throw optionError('type', 'adminToken', 'adminToken must be one line of printable ASCII without spaces');
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

/**
 * startServer's options checked (a bad one throws naming it) and the seed loaded, as the core server takes them.
 * @internal
 */
export async function coreOptions(
  options: StartServerOptions,
  instance: CoreOptions['instance'],
): Promise<CoreOptions> {
  const given = checkKnownOptions('startServer', options, START_SERVER_OPTION_NAMES);
  const core: Partial<Record<keyof CoreOptions, unknown>> = {};
  for (const { name, min, max } of NUMBER_OPTIONS) {
    const value = optionalInteger(given, name, min, max);
    if (value !== undefined) core[name] = value;
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
  const replay = await replaySettings(given);
  return {
    ...replay,
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
  };
}
