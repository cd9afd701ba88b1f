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
import { parseReplaySpeed, replaySettings, replaySpeedWords, type ReplayOptions } from './replay-options.js';
import {
  SERVE_OPTIONS,
  START_SERVER_OPTION_NAMES,
  type ServeOption,
  type StartServerOptionName,
} from './serve-options.js';
import * as z from 'zod/mini';
import { optionError } from './options.js';
import {
  anything,
  callback,
  flag,
  integer,
  oneOf,
  OptionTable,
  optional,
  ruled,
  shaped,
  text,
  textList,
  type OptionSchema,
} from './option-table.js';
import { JsonPathError, parseJsonPath } from '../server/record/json-path.js';

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

// Both ways: a new startServer option needs its row in the table, and a row marked api its option here.
const sameNames: [StartServerOptionName] extends [keyof StartServerOptions]
  ? [keyof StartServerOptions] extends [StartServerOptionName]
    ? true
    : never
  : never = true;
void sameNames;

/** What is wrong with a `store` that is neither `memory` nor a redis:// URL (never its password), or nothing. */
function storeProblem(store: string): string | undefined {
  if (store === 'memory') return undefined;
  try {
    checkRedisUrl(store);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A `store` that is neither `memory` nor a redis:// URL: a bad option (its message never shows a password). */
export function checkStoreUrl(store: string): void {
  const problem = storeProblem(store);
  if (problem !== undefined) throw optionError('type', 'store', problem);
}

/** The words of what went wrong, from a check that throws; nothing when it did not. */
function thrown(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The options whose rows say less than their check: objects, and values with a rule beyond
 * their type. The seed, the recording and the logger pass as they were given (z.custom, not
 * z.object, which would hand on a copy: a logger's methods live on its prototype).
 */
const SPECIAL: Partial<Record<StartServerOptionName, OptionSchema<unknown>>> = {
  seed: shaped(
    (value) => typeof value === 'string' || (value !== null && typeof value === 'object'),
    (name, value) =>
      `${name} must be a seed object or the path of a seed file, got ${value === null ? 'null' : typeof value}`,
  ),
  tls: ruled(
    (name) => {
      const words = () => `${name} must be { cert, key } with the PEM contents as strings or Buffers`;
      const pem = z.union([z.string(), z.instanceof(Buffer)], { error: words });
      return z.object({ cert: pem, key: pem }, { error: words });
    },
    // OpenSSL's words: not PEM, a key that is not the certificate's, …
    (name, { cert, key }) => {
      const problem = thrown(() => createSecureContext({ cert, key }));
      return problem === undefined ? undefined : `${name}: cannot use the certificate and key: ${problem}`;
    },
  ),
  logger: shaped(
    (value) => value !== null && value !== undefined && typeof (value as Logger).log === 'function',
    (name) => `${name} must be an object with a log(level, message, fields) method`,
  ),
  adminToken: ruled(text, (name, token) =>
    isValidToken(token) ? undefined : `${name} must be one line of printable ASCII without spaces`,
  ),
  allowedHosts: (name) =>
    z.union([z.literal('all'), z.array(z.string())], { error: () => `${name} must be an array of strings or 'all'` }),
  allowedOrigins: ruled(textList(), (name, origins) => {
    for (const origin of origins) {
      const problem = thrown(() => normalizeOrigin(origin));
      if (problem !== undefined) return `${name}: ${problem}`;
    }
    return undefined;
  }),
  store: ruled(text, (_name, store) => storeProblem(store)),
  replay: shaped(
    (value) => typeof value === 'string' || (value !== null && typeof value === 'object'),
    (name, value) =>
      `${name} must be the path of a recording or a recording, got ${value === null ? 'null' : typeof value}`,
  ),
  replaySpeed: ruled(
    anything,
    (_name, speed) => (parseReplaySpeed(speed) === undefined ? replaySpeedWords(speed) : undefined),
    true,
  ),
  replayIgnore: ruled(textList(), (name, fields) =>
    fields.some((field) => field.trim() === '') ? `${name}: a field name cannot be empty` : undefined,
  ),
  recordRedact: ruled(textList(), (name, paths) => {
    for (const path of paths) {
      try {
        parseJsonPath(path);
      } catch (error) {
        if (error instanceof JsonPathError)
          return `${name} has a path outside the JSONPath subset it takes: ${error.message}`;
        throw error;
      }
    }
    return undefined;
  }),
  onProxiedFrame: callback<(frame: ProxiedFrame) => void>(),
};

/** An option's schema from its row of serve's table (its type and range, its choices). */
function rowSchema(name: StartServerOptionName): OptionSchema<unknown> {
  const special = SPECIAL[name];
  if (special !== undefined) return special;
  const row: ServeOption = SERVE_OPTIONS[name];
  switch (row.type) {
    case 'integer':
    case 'duration':
    case 'bytes':
      return integer(row.min!, row.max!);
    case 'boolean':
      return flag;
    case 'choice':
      return oneOf(row.choices as readonly [string, ...string[]]);
    case 'list':
      return textList();
    case 'string':
    case 'file':
      return text;
    case 'object':
      throw new Error(`startServer's option ${name} is an object: its schema is written out in SPECIAL`);
  }
}

/**
 * startServer's option table: each option's schema from its row of serve's table (so a flag and
 * its option take the same range), the objects and rules written out above. A recording proxy
 * (`record`) takes a part of it.
 * @internal
 */
export const START_SERVER = new OptionTable(
  'startServer',
  optional(Object.fromEntries(START_SERVER_OPTION_NAMES.map((name) => [name, rowSchema(name)]))),
);

/**
 * startServer's options, checked by START_SERVER: each has the type StartServerOptions gives it.
 * @internal
 */
export function checkStartOptions(options: StartServerOptions): StartServerOptions {
  return START_SERVER.check(options) as StartServerOptions;
}

/** The Redis store option of the core server, or none for the memory store. */
function redisOption(given: StartServerOptions): {
  redis?: { url: string; prefix?: string; resetStore: boolean; allowEviction: boolean };
} {
  const { store = 'memory', redisPrefix: prefix, resetStore = false, allowEviction = false } = given;
  if (store === 'memory') {
    const needsRedis =
      prefix !== undefined ? 'redisPrefix' : resetStore ? 'resetStore' : allowEviction ? 'allowEviction' : '';
    if (needsRedis !== '')
      throw optionError('type', needsRedis, 'redisPrefix, resetStore and allowEviction need store: a redis:// URL');
    return {};
  }
  return { redis: { url: store, ...(prefix === undefined ? {} : { prefix }), resetStore, allowEviction } };
}

async function loadSeed(seed: SeedInput | string | undefined): Promise<Seed> {
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
    return parseSeed(seed);
  } catch (error) {
    if (error instanceof SeedError) {
      const where = typeof seed === 'string' ? `invalid seed file ${seed}` : 'invalid seed';
      throw new StreamPostsError('invalid-seed', `${where}: ${error.message}`, { cause: error, path: error.path });
    }
    throw error;
  }
}

/** The core's numeric options: those whose row has a range (the core takes them under the same names). */
const NUMBER_OPTIONS = START_SERVER_OPTION_NAMES.filter(
  (name): name is StartServerOptionName & keyof SharedServerOptions =>
    SERVE_OPTIONS[name].type !== 'object' && 'min' in SERVE_OPTIONS[name],
);

/**
 * startServer's options checked (a bad one throws naming it) and the seed loaded, as the core server takes them.
 * @internal
 */
export async function coreOptions(
  options: StartServerOptions,
  instance: CoreOptions['instance'],
): Promise<CoreOptions> {
  const given = checkStartOptions(options);
  const core: Partial<Record<keyof CoreOptions, unknown>> = {};
  for (const name of NUMBER_OPTIONS) if (given[name] !== undefined) core[name] = given[name];
  const { host, admin, tls, logger, state, hostedHiddenPosts, adminToken, allowedHosts, allowedOrigins } = given;
  const store = redisOption(given);
  if (state !== undefined && store.redis !== undefined) {
    throw optionError('type', 'state', `state ${STATE_NEEDS_MEMORY}`);
  }
  const seed = await loadSeed(given.seed);
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
    ...(adminToken === undefined ? {} : { adminToken }),
    ...(allowedHosts === undefined ? {} : { allowedHosts }),
    ...(allowedOrigins === undefined ? {} : { allowedOrigins: [...allowedOrigins] }),
    ...(logger ? { logger } : {}),
    ...(instance ? { instance } : {}),
  };
}
