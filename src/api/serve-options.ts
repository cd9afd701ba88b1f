/**
 * Every option of `serve`, once: its `startServer` name (the key), its flag, its type and
 * range, its default and one line of doc. `serve`'s flags, startServer's checks and the flag
 * table of docs/serve.md are all read from here (a docs test holds the page to it).
 *
 * Pure data on purpose: the CLI reads it to declare its flags, and `--help` or
 * `post --dry-run` must not pay for loading the server.
 */
import { DEFAULTS } from '../server/defaults.js';
import { DEFAULT_REDIS_PREFIX } from '../server/stores/redis/redis-keys.js';
import { REPLAY_SERVE_OPTIONS } from './serve-options-replay.js';

/** How a value is read from a flag, and what startServer accepts. */
export type ServeOptionType =
  'integer' | 'duration' | 'bytes' | 'string' | 'file' | 'boolean' | 'choice' | 'list' | 'object';

export interface ServeOption {
  /** The flag as commander declares it; none for an option of startServer alone. */
  readonly flag?: string;
  readonly type: ServeOptionType;
  /** The range of a number, both ends included. */
  readonly min?: number;
  readonly max?: number;
  readonly choices?: readonly string[];
  /** The value taken when none is given; none when "not set" means something of its own. */
  readonly default?: number | string | boolean;
  /** The default as docs/serve.md and --help word it. */
  readonly shownDefault: string;
  /** The environment variable the flag also reads. */
  readonly env?: string;
  /** Whether `startServer` takes it (under the key), or it belongs to the command alone. */
  readonly api: boolean;
  /** One line of doc: the flag's --help text. */
  readonly doc: string;
}

const ANY_COUNT = Number.MAX_SAFE_INTEGER;
// Node keeps a timer's delay in 32 bits.
const MAX_TIMER_MS = 2_147_483_647;
const MAX_RATE = 1_000_000;

export const SERVE_OPTIONS = {
  host: {
    flag: '--host <host>',
    type: 'string',
    default: DEFAULTS.host,
    shownDefault: '`127.0.0.1`',
    api: true,
    doc: 'address to bind',
  },
  port: {
    flag: '--port <port>',
    type: 'integer',
    min: 0,
    max: 65535,
    default: DEFAULTS.port,
    shownDefault: '`8787`',
    api: true,
    doc: 'port to listen on; 0 picks a free port',
  },
  seed: {
    flag: '--seed <file>',
    type: 'file',
    shownDefault: 'built-in demo seed',
    api: true,
    doc: 'JSON seed file of users, streams and posts (default: built-in demo seed)',
  },
  tlsCert: {
    flag: '--tls-cert <file>',
    type: 'file',
    shownDefault: '—',
    api: false,
    doc: 'PEM certificate: serve wss:// and https://',
  },
  tlsKey: {
    flag: '--tls-key <file>',
    type: 'file',
    shownDefault: '—',
    api: false,
    doc: 'PEM private key for --tls-cert',
  },
  tls: { type: 'object', shownDefault: '—', api: true, doc: 'PEM certificate and key (contents, not paths)' },
  idempotencyWindowMs: {
    flag: '--idempotency-window <duration>',
    type: 'duration',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.idempotencyWindowMs,
    shownDefault: '`10m`',
    api: true,
    doc: 'how long an idempotencyKey deduplicates',
  },
  uploadWindowMs: {
    flag: '--upload-window <duration>',
    type: 'duration',
    min: 1,
    max: ANY_COUNT,
    default: DEFAULTS.uploadWindowMs,
    shownDefault: '`1h`',
    api: true,
    doc: 'how long an upload address (REST uploadMedia) takes uploads',
  },
  rateLimit: {
    flag: '--rate-limit <n>',
    type: 'integer',
    min: 0,
    max: MAX_RATE,
    default: DEFAULTS.rateLimit,
    shownDefault: '`200`',
    api: true,
    doc: 'commands per second per connection (burst twice that); 0 turns it off',
  },
  keyRateLimit: {
    flag: '--key-rate-limit <n>',
    type: 'integer',
    min: 0,
    max: MAX_RATE,
    shownDefault: '`400` (`0` with `--rate-limit 0`)',
    api: true,
    doc: `commands and REST requests per second per key, all its connections together (burst twice that); 0 turns it off (default: ${DEFAULTS.keyRateLimit}, or 0 with --rate-limit 0)`,
  },
  maxConnectionsPerKey: {
    flag: '--max-connections-per-key <n>',
    type: 'integer',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxConnectionsPerKey,
    shownDefault: '`16`',
    api: true,
    doc: 'open connections per key; 0 = no cap',
  },
  maxSubscriptions: {
    flag: '--max-subscriptions <n>',
    type: 'integer',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxSubscriptions,
    shownDefault: '`64`',
    api: true,
    doc: 'subscriptions per connection; 0 = no cap',
  },
  maxPendingCommands: {
    flag: '--max-pending-commands <n>',
    type: 'integer',
    min: 1,
    max: ANY_COUNT,
    default: DEFAULTS.maxPendingCommands,
    shownDefault: '`1000`',
    api: true,
    doc: 'commands one connection may have waiting for their turn before it is closed with 1008',
  },
  maxPendingReleases: {
    flag: '--max-pending-releases <n>',
    type: 'integer',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxPendingReleases,
    shownDefault: '`1000`',
    api: true,
    doc: 'hidden posts waiting for their releaseAt, per stream; 0 = no cap',
  },
  maxPendingReleaseBytes: {
    flag: '--max-pending-release-bytes <bytes>',
    type: 'bytes',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxPendingReleaseBytes,
    shownDefault: '`16MiB`',
    api: true,
    doc: 'text bytes of the hidden posts waiting for their releaseAt, per stream; 0 = no cap',
  },
  maxIdempotencyKeys: {
    flag: '--max-idempotency-keys <n>',
    type: 'integer',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxIdempotencyKeys,
    shownDefault: '`10000`',
    api: true,
    doc: 'idempotency keys remembered per stream within the window; 0 = no cap',
  },
  maxIdempotencyBytes: {
    flag: '--max-idempotency-bytes <bytes>',
    type: 'bytes',
    min: 0,
    max: ANY_COUNT,
    default: DEFAULTS.maxIdempotencyBytes,
    shownDefault: '`16MiB`',
    api: true,
    doc: 'text bytes of the posts those keys hold, per stream; 0 = no cap',
  },
  maxBufferedBytes: {
    flag: '--max-buffered <bytes>',
    type: 'bytes',
    min: 1,
    max: ANY_COUNT,
    default: DEFAULTS.maxBufferedBytes,
    shownDefault: '`8MiB`',
    api: true,
    doc: 'bytes queued for one subscriber before it is closed with 1013',
  },
  keepAliveMs: {
    flag: '--keep-alive <duration>',
    type: 'duration',
    min: 1,
    max: MAX_TIMER_MS,
    default: DEFAULTS.keepAliveMs,
    shownDefault: '`30s`',
    api: true,
    doc: 'ping interval; an unanswered ping ends the connection',
  },
  hostedHiddenPosts: {
    flag: '--hosted-hidden-posts <mode>',
    type: 'choice',
    choices: ['at-release', 'push'],
    default: 'at-release',
    shownDefault: '`at-release`',
    api: true,
    doc: "how clients that did not ask for this tool's dialect (hello=1) get a hidden post: at its release, as a new post with its text, or pushed hidden at once and released later",
  },
  logFormat: {
    flag: '--log-format <format>',
    type: 'choice',
    choices: ['text', 'json'],
    default: 'text',
    shownDefault: '`text`',
    api: false,
    doc: 'log line format',
  },
  json: {
    flag: '--json',
    type: 'boolean',
    shownDefault: 'off',
    api: false,
    doc: 'machine output: every line one JSON object (the same as --log-format json)',
  },
  quiet: {
    flag: '-q, --quiet',
    type: 'boolean',
    default: false,
    shownDefault: 'off',
    api: false,
    doc: 'print the listening line, then warnings and errors only',
  },
  verbose: {
    flag: '-v, --verbose',
    type: 'boolean',
    shownDefault: 'off',
    api: false,
    doc: 'log debug lines too (each REST request)',
  },
  admin: {
    flag: '--admin',
    type: 'boolean',
    shownDefault: 'on when bound to loopback or with `--admin-token`',
    api: true,
    doc: 'enable /_admin endpoints (default: only when bound to loopback)',
  },
  noAdmin: {
    flag: '--no-admin',
    type: 'boolean',
    shownDefault: 'on when bound to loopback or with `--admin-token`',
    api: false,
    doc: 'disable /_admin endpoints',
  },
  adminToken: {
    flag: '--admin-token <token>',
    type: 'string',
    env: 'STREAM_POSTS_ADMIN_TOKEN',
    shownDefault: '— (env `STREAM_POSTS_ADMIN_TOKEN`, preferred: argv shows in `ps`)',
    api: true,
    doc: 'admin requests need Authorization: Bearer <token> (turns admin on); prefer the env variable',
  },
  allowedHosts: {
    flag: '--allowed-hosts <hosts>',
    type: 'list',
    env: 'STREAM_POSTS_ALLOWED_HOSTS',
    shownDefault: '— (env `STREAM_POSTS_ALLOWED_HOSTS`)',
    api: true,
    doc: 'Host names accepted besides loopback names, IP addresses and --host (comma-separated, .example.com for subdomains); "all" turns the check off',
  },
  allowedOrigins: {
    flag: '--allow-origin <origin>',
    type: 'list',
    env: 'STREAM_POSTS_ALLOW_ORIGIN',
    shownDefault: '— (env `STREAM_POSTS_ALLOW_ORIGIN`)',
    api: true,
    doc: 'browser origin accepted besides loopback ones, e.g. https://app.example.com (repeatable or comma-separated); "*" accepts any',
  },
  bodyTimeoutMs: {
    flag: '--body-timeout <duration>',
    type: 'duration',
    min: 1,
    max: MAX_TIMER_MS,
    default: DEFAULTS.bodyTimeoutMs,
    shownDefault: '`10s`',
    api: true,
    doc: 'how long a request body may take to arrive (then 408)',
  },
  headersTimeoutMs: {
    flag: '--headers-timeout <duration>',
    type: 'duration',
    min: 1,
    max: MAX_TIMER_MS,
    default: DEFAULTS.headersTimeoutMs,
    shownDefault: '`10s`',
    api: true,
    doc: 'how long request headers may take to arrive',
  },
  logger: { type: 'object', shownDefault: 'silent', api: true, doc: "receives the server's log lines (never keys)" },
  store: {
    flag: '--store <store>',
    type: 'string',
    default: 'memory',
    shownDefault: '`memory`',
    api: true,
    doc: 'where state lives: memory, or redis://[:password@]HOST:PORT[/DB] to share it with other instances',
  },
  redisPrefix: {
    flag: '--redis-prefix <prefix>',
    type: 'string',
    default: DEFAULT_REDIS_PREFIX,
    shownDefault: '`stream-posts:`',
    api: true,
    doc: 'prefix of every Redis key, so services can share a Redis',
  },
  resetStore: {
    flag: '--reset-store',
    type: 'boolean',
    default: false,
    shownDefault: 'off',
    api: true,
    doc: 'replace whatever the Redis keyspace holds (another seed, all posts) with this seed',
  },
  allowEviction: {
    flag: '--allow-eviction',
    type: 'boolean',
    default: false,
    shownDefault: 'off',
    api: true,
    doc: 'start on a Redis whose maxmemory-policy may evict keys (posts it evicts are lost)',
  },
  workers: {
    flag: '--workers <n>',
    type: 'integer',
    min: 1,
    max: ANY_COUNT,
    default: 1,
    shownDefault: '`1`',
    api: false,
    doc: 'processes sharing the port and the store, to use more cores (needs --store redis://…)',
  },
  state: {
    flag: '--state <file>',
    type: 'file',
    shownDefault: '—',
    api: true,
    doc: 'keep posts, pending releases, idempotency keys and the clock in this file across restarts',
  },
  scenario: {
    flag: '--scenario <file>',
    type: 'file',
    shownDefault: '—',
    api: false,
    doc: 'play a scenario (JSON array or NDJSON of timed steps) from start-up',
  },
  speed: {
    flag: '--speed <n>',
    type: 'string',
    shownDefault: '`1`',
    api: false,
    doc: 'with --scenario: play N times faster than real time',
  },
  exitAfterScenario: {
    flag: '--exit-after-scenario',
    type: 'boolean',
    shownDefault: 'off',
    api: false,
    doc: 'with --scenario: stop (and end the --exec command) once it has played',
  },
  scenarioStart: {
    flag: '--scenario-start <when>',
    type: 'choice',
    choices: ['at-start', 'first-subscriber'],
    shownDefault: '`first-subscriber` with `--exec`, else `at-start`',
    api: false,
    doc: "with --scenario: its clock starts at serve's start (at-start) or at the first subscription on any transport (first-subscriber: the default when a command is given to run)",
  },
  record: {
    flag: '--record <file>',
    type: 'file',
    shownDefault: '—',
    api: true,
    doc: 'be a recording proxy: pass every connection and request to --upstream and save them, keys replaced, to this file on exit',
  },
  upstream: {
    flag: '--upstream <url>',
    type: 'string',
    shownDefault: '—',
    api: true,
    doc: 'with --record: the service to pass everything to (wss://host, or any serve: ws://127.0.0.1:8787); its origin only, never a key',
  },
  recordMaxBytes: {
    flag: '--record-max <bytes>',
    type: 'bytes',
    min: 1,
    max: ANY_COUNT,
    default: DEFAULTS.recordMaxBytes,
    shownDefault: '`100MiB`',
    api: true,
    doc: 'with --record: bytes recorded before recording stops (with one warning; proxying goes on)',
  },
  recordMaxConnections: {
    flag: '--record-max-connections <n>',
    type: 'integer',
    min: 1,
    max: ANY_COUNT,
    default: DEFAULTS.recordMaxConnections,
    shownDefault: '`1000`',
    api: true,
    doc: 'with --record: connections and requests passed on at once; past it an upgrade or request gets 503',
  },
  recordRedact: {
    flag: '--record-redact <jsonpath>',
    type: 'list',
    shownDefault: '—',
    api: true,
    doc: 'with --record: also replace the fields this JSONPath names ($..author, $.requests[*].response.body.json.items[*].name); repeatable',
  },
  onProxiedFrame: {
    type: 'object',
    shownDefault: '—',
    api: true,
    doc: 'with record: told each proxied frame and request, keys replaced (what serve --record --trace prints)',
  },
  trace: {
    flag: '--trace',
    type: 'boolean',
    shownDefault: 'off',
    api: false,
    doc: 'with --record: print every proxied frame and request on stderr, keys replaced',
  },
  exec: {
    flag: '--exec <command>',
    type: 'string',
    shownDefault: '—',
    api: false,
    doc: 'run a command against the server, then stop; exits with its exit code',
  },
  ...REPLAY_SERVE_OPTIONS,
  color: {
    flag: '--no-color',
    type: 'boolean',
    shownDefault: 'colour on a TTY',
    api: false,
    doc: 'no colours in output',
  },
} as const satisfies Record<string, ServeOption>;

export type ServeOptionName = keyof typeof SERVE_OPTIONS;

/** The names startServer takes. */
export type StartServerOptionName = {
  [K in ServeOptionName]: (typeof SERVE_OPTIONS)[K]['api'] extends true ? K : never;
}[ServeOptionName];

/** startServer's numeric options: those with a range. */
export type NumericOptionName = {
  [K in StartServerOptionName]: (typeof SERVE_OPTIONS)[K] extends { min: number } ? K : never;
}[StartServerOptionName];

/** The options startServer takes, in the table's order. */
export const START_SERVER_OPTION_NAMES = (Object.keys(SERVE_OPTIONS) as ServeOptionName[]).filter(
  (name): name is StartServerOptionName => SERVE_OPTIONS[name].api,
);

export { STATE_NEEDS_MEMORY } from '../protocol/state.js';
