import { spawn } from 'node:child_process';
import cluster from 'node:cluster';
import { readTextFile, readTlsFiles } from '../files.js';
import { formatServeBanner, keyVariable } from '../../render/serve-banner.js';
import { type ScenarioStart, type StartServerOptions, type StreamPostsServer, StreamPostsError } from '../../index.js';
import {
  DEMO_SEED,
  checkStoreUrl,
  createLogger,
  DEFAULT_REDIS_PREFIX,
  parseSeedFile,
  redactRedisUrl,
  withFields,
  type LogFormat,
  startInstance,
  SERVE_OPTIONS,
  START_SERVER_OPTION_NAMES,
  STATE_NEEDS_MEMORY,
  type ServeOption,
  type ServeOptionName,
  type NumericOptionName,
  optionOf,
} from '../../api/internal.js';
import type { Seed } from '../../protocol/seed.js';
import { playScenario } from './scenario.js';
import { EXIT, ExitError, usageError } from '../exit.js';
import { StopSignals, type ExecChild } from '../serve-signals.js';
import { formatReplayReport, replayFailed, replayOptions, type ServeReplayFlags } from '../serve-replay.js';
import { reportListening, servePrimary, storeExit, type ServedAt } from '../serve-workers.js';
import { workerLink } from '../worker-peers.js';
import { serveRecording } from './serve-record.js';

export interface ServeOptions extends ServeReplayFlags {
  host: string;
  port: number;
  seed?: string;
  tlsCert?: string;
  tlsKey?: string;
  idempotencyWindow: number;
  uploadWindow: number;
  rateLimit: number;
  /** Undefined: the server's default (off when rateLimit is 0). */
  keyRateLimit?: number | undefined;
  maxConnectionsPerKey: number;
  maxSubscriptions: number;
  maxPendingCommands: number;
  maxPendingReleases: number;
  maxPendingReleaseBytes: number;
  maxIdempotencyKeys: number;
  maxIdempotencyBytes: number;
  maxBuffered: number;
  keepAlive: number;
  /** How the hosted dialect delivers hidden posts (PROTOCOL.md B1a). */
  hostedHiddenPosts: 'at-release' | 'push';
  logFormat: LogFormat;
  /** Warnings and errors only (the listening line is still printed). */
  quiet: boolean;
  /** Debug lines too. */
  verbose?: boolean;
  admin?: boolean;
  adminToken?: string | undefined;
  allowedHosts?: string[] | undefined;
  allowOrigin?: string[] | undefined;
  bodyTimeout: number;
  headersTimeout: number;
  exec?: string;
  /** `memory`, or a `redis://` URL whose keyspace several instances share. */
  store?: string;
  redisPrefix?: string;
  resetStore?: boolean;
  /** Start on a Redis whose maxmemory-policy may evict keys. */
  allowEviction?: boolean;
  /** A file the memory store's state is kept in across restarts. */
  state?: string;
  /** A scenario file played from start-up, `speed` times faster than real time. */
  scenario?: string;
  speed?: number;
  /** Stop (as on SIGTERM, the --exec command too) once the scenario has played. */
  exitAfterScenario?: boolean;
  /** When the scenario's clock starts; by default at the first subscription when `exec` is given (it connects after the start). */
  scenarioStart?: ScenarioStart;
  /** Processes sharing the port and the (Redis) store; 1 = this process alone. */
  workers?: number;
  /** Be a recording proxy of `upstream`, saving to this file (serve-record.ts). */
  record?: string;
  upstream?: string;
  recordMax: number;
  recordMaxConnections: number;
  recordRedact?: string[];
  /** With --record: every proxied frame and request on stderr. */
  trace?: boolean;
  color: boolean;
}

/** The Redis store, from `--store`, `--redis-prefix`, `--reset-store`, `--allow-eviction`; undefined for memory. */
function redisStore(
  options: ServeOptions,
): { url: string; prefix: string; resetStore: boolean; allowEviction: boolean } | undefined {
  const store = options.store ?? 'memory';
  if (store === 'memory') {
    if (options.resetStore)
      throw usageError('--reset-store needs --store redis://HOST:PORT: the memory store starts empty anyway');
    if (options.allowEviction)
      throw usageError('--allow-eviction needs --store redis://HOST:PORT: the memory store evicts nothing');
    return undefined;
  }
  try {
    checkStoreUrl(store);
  } catch (error) {
    if (optionOf(error) !== 'store') throw error;
    throw usageError(`--store: ${(error as Error).message}`, { cause: error });
  }
  return {
    url: store,
    prefix: options.redisPrefix ?? DEFAULT_REDIS_PREFIX,
    resetStore: options.resetStore ?? false,
    allowEviction: options.allowEviction ?? false,
  };
}

function checkScenarioFlags(options: ServeOptions, workers: number): void {
  if (options.scenario === undefined) {
    const without =
      options.speed !== undefined
        ? '--speed'
        : options.exitAfterScenario
          ? '--exit-after-scenario'
          : options.scenarioStart !== undefined
            ? '--scenario-start'
            : '';
    if (without !== '') throw usageError(`${without} needs --scenario FILE`);
  } else if (workers > 1) {
    throw usageError('--scenario plays in one process: it cannot be combined with --workers above 1');
  }
}

/** What the start-up output and `--exec` need to know of a server, wherever it runs. */
function servedAt(server: StreamPostsServer): ServedAt {
  return { url: server.url, httpUrl: server.httpUrl, adminEnabled: server.adminUrl !== undefined };
}

/** Where state lives, for the start-up output: never a Redis password. */
function storeLine(options: ServeOptions): string {
  const store = options.store ?? 'memory';
  return store === 'memory'
    ? 'memory'
    : `${redactRedisUrl(store)} (prefix ${options.redisPrefix ?? DEFAULT_REDIS_PREFIX})`;
}

async function loadSeed(path: string | undefined): Promise<Seed> {
  if (path === undefined) return DEMO_SEED;
  try {
    return parseSeedFile(await readTextFile(path, 'seed file'));
  } catch (error) {
    if (error instanceof StreamPostsError && error.code === 'invalid-seed')
      throw usageError(`invalid seed file ${path}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** Environment for `--exec`: where the server is and every key of the seed. */
function execEnvironment(server: ServedAt, seed: Seed, adminToken: string | undefined): Record<string, string> {
  const env: Record<string, string> = {
    STREAM_POSTS_URL: server.url,
    STREAM_POSTS_HTTP_URL: server.httpUrl,
  };
  const firstReader = seed.users.find((user) => user.follows.length > 0) ?? seed.users[0]!;
  env['STREAM_POSTS_API_KEY'] = firstReader.readerKey;
  for (const user of seed.users) env[keyVariable('reader', user.id)] = user.readerKey;
  for (const stream of seed.streams) env[keyVariable('stream', stream.id)] = stream.key;
  if (server.adminEnabled) env['STREAM_POSTS_ADMIN_URL'] = `${server.httpUrl}/_admin`;
  if (adminToken !== undefined) env['STREAM_POSTS_ADMIN_TOKEN'] = adminToken;
  return env;
}

function perimeterOptions({
  adminToken,
  allowedHosts,
  allowOrigin,
}: ServeOptions): Pick<StartServerOptions, 'adminToken' | 'allowedHosts' | 'allowedOrigins'> {
  return {
    ...(adminToken === undefined ? {} : { adminToken }),
    ...(allowedHosts === undefined ? {} : { allowedHosts: allowedHosts.includes('all') ? 'all' : allowedHosts }),
    ...(allowOrigin === undefined ? {} : { allowedOrigins: allowOrigin }),
  };
}

/**
 * The options whose values reach startServer as the user wrote them, unparsed by a flag's own
 * parser, and whether their errors name the environment variable too (the admin token's is
 * the way the docs recommend to pass it).
 */
const PASSED_AS_WRITTEN: Partial<Record<ServeOptionName, { namesVariable: boolean }>> = {
  adminToken: { namesVariable: true },
  allowedHosts: { namesVariable: false },
  allowedOrigins: { namesVariable: false },
};

/** startServer's error for a value passed as written, reworded as a usage error naming the flag. */
function flagError(error: unknown): ExitError | undefined {
  const option = optionOf(error) as ServeOptionName | undefined;
  // The files of --tls-cert and --tls-key, read, are the one `tls` option.
  if (option === 'tls') {
    const cause = (error as Error).cause;
    return usageError(
      `cannot use the TLS certificate and key: ${cause instanceof Error ? cause.message : (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const row: ServeOption | undefined = option === undefined ? undefined : SERVE_OPTIONS[option];
  if (option === undefined || row?.flag === undefined) return undefined;
  const flag = /--[a-z][a-z-]*/.exec(row.flag)![0];
  const wording = PASSED_AS_WRITTEN[option];
  // A value the flag's parser turned into a number (a duration in ms, a size in bytes) is
  // named by the flag and then by startServer's words, in its unit.
  if (wording === undefined) return usageError(`${flag}: ${(error as Error).message}`, { cause: error });
  const named = wording.namesVariable && row.env !== undefined ? `${flag} (or ${row.env})` : flag;
  return usageError(named + (error as Error).message.slice(option.length), { cause: error });
}

/** Commander's name for a flag's value: `--max-buffered <bytes>` gives `maxBuffered`. */
const flagAttribute = (flag: string): string =>
  /--([a-z][a-z0-9-]*)/.exec(flag)![1]!.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/** startServer's numeric options (port, windows, limits, caps), each read from its flag as the option table pairs them. */
export function numericOptions(options: ServeOptions): Partial<Record<NumericOptionName, number>> {
  const given = options as unknown as Record<string, unknown>;
  const numbers: Partial<Record<NumericOptionName, number>> = {};
  for (const name of START_SERVER_OPTION_NAMES) {
    const row: ServeOption = SERVE_OPTIONS[name];
    if (row.flag === undefined || row.min === undefined) continue;
    const value = given[flagAttribute(row.flag)];
    // Unset (--key-rate-limit): startServer's own default applies.
    if (typeof value === 'number') numbers[name as NumericOptionName] = value;
  }
  return numbers;
}

function printStartup(out: NodeJS.WritableStream, server: ServedAt, seed: Seed, options: ServeOptions): void {
  const seedSource = options.seed ?? 'built-in demo seed';
  if (options.logFormat === 'json') {
    const line = (value: object) =>
      out.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', ...value })}\n`);
    line({
      msg: 'listening',
      url: server.url,
      httpUrl: server.httpUrl,
      admin: server.adminEnabled,
      ...(server.adminEnabled ? { dashboard: `${server.httpUrl}/` } : {}),
      seed: seedSource,
      store: storeLine(options),
    });
    for (const user of seed.users) line({ msg: 'reader key', user: user.id, name: user.name, key: user.readerKey });
    for (const stream of seed.streams)
      line({ msg: 'stream key', stream: stream.id, name: stream.name, key: stream.key });
    return;
  }
  out.write(
    formatServeBanner({
      url: server.url,
      httpUrl: server.httpUrl,
      admin: server.adminEnabled,
      seed,
      seedSource,
      color: options.color,
    }),
  );
  if (options.store !== undefined && options.store !== 'memory') out.write(`store: ${storeLine(options)}\n`);
}

/**
 * `ownGroup`: the command leads a process group that a stop signals as a whole, as Ctrl-C
 * does a terminal's (`--exit-after-scenario`: the shell running the command would not pass
 * the signal on). Off otherwise: a command outside the terminal's group cannot read from it.
 */
function runChild(command: string, env: Record<string, string>, ownGroup = false): ExecChild {
  const child = spawn(command, { shell: true, stdio: 'inherit', env: { ...process.env, ...env }, detached: ownGroup });
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== null) resolve(code);
      else resolve(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  });
  // A signal sent before the shell runs could meet this process's own handlers in the new one.
  const spawned = new Promise<void>((resolve) => child.once('spawn', resolve));
  const kill = (signal: NodeJS.Signals) => {
    if (!ownGroup) return void child.kill(signal);
    void spawned.then(() => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // The group has already gone.
      }
    });
  };
  return { done, kill };
}

/** Runs `serve` until a signal (or the --exec command) ends it; resolves to the exit code. */
export async function serve(options: ServeOptions): Promise<number> {
  if (options.record !== undefined || options.upstream !== undefined || options.recordRedact || options.trace)
    return serveRecording(options, { flagError, runChild, stdout: process.stdout, stderr: process.stderr });
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
    throw usageError('--tls-cert and --tls-key go together: give both or neither');
  }
  // The primary of --workers has loaded (or reset) the seed: a worker must not reset again.
  const redis = redisStore(cluster.isWorker ? { ...options, resetStore: false } : options);
  if (options.state !== undefined && redis !== undefined) {
    throw usageError(`--state ${STATE_NEEDS_MEMORY}`);
  }
  const seed = await loadSeed(options.seed);
  const workers = options.workers ?? 1;
  checkScenarioFlags(options, workers);
  const replay = replayOptions(options);
  if (workers > 1 && redis === undefined) {
    throw usageError(
      '--workers above 1 needs --store redis://HOST:PORT: with the memory store each worker would keep posts, releases and idempotency keys of its own instead of being one service',
    );
  }
  // stdout carries the start-up output only (scripts read the port from its first line); the
  // log goes to stderr. With --exec the command owns stdout, and the start-up output moves too.
  const out = options.exec === undefined ? process.stdout : process.stderr;
  // A script that read what it needed (`serve | head -1` for the port) closes the pipe: the
  // service goes on, its log on stderr, instead of dying of the next start-up line's EPIPE.
  out.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  const announce = (at: ServedAt) => {
    if (options.quiet && options.exec !== undefined) return;
    // The URL line is printed even with --quiet: scripts read it to find a port chosen with --port 0.
    if (options.quiet && options.logFormat === 'json')
      out.write(
        `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'listening', url: at.url })}\n`,
      );
    else if (options.quiet) out.write(`listening on ${at.url}\n`);
    else printStartup(out, at, seed, options);
  };
  if (workers > 1 && cluster.isPrimary) {
    return servePrimary({
      workers,
      seed,
      redis: redis!,
      idempotencyWindowMs: options.idempotencyWindow,
      exec: options.exec,
      announce,
      runExec: (command, at) => runChild(command, execEnvironment(at, seed, options.adminToken)),
    });
  }
  const exec = cluster.isWorker ? undefined : options.exec;
  const tls = await readTlsFiles(options.tlsCert, options.tlsKey);
  const signals = new StopSignals();
  const lines = createLogger(
    options.logFormat,
    process.stderr,
    Date.now,
    options.quiet ? 'warn' : options.verbose === true ? 'debug' : 'info',
  );
  // Under --workers every line says which worker wrote it (cluster ids count from 1, replacements included).
  const logger = cluster.worker ? withFields(lines, { worker: cluster.worker.id }) : lines;
  // Under --workers each worker is an instance of one service: its connection ids say which
  // (`w2-c5`), and its admin endpoints answer for every worker.
  const instance = cluster.worker ? { name: `w${cluster.worker.id}-`, link: workerLink() } : undefined;
  let server: StreamPostsServer;
  try {
    server = await startInstance(
      {
        seed,
        host: options.host,
        ...(tls ? { tls } : {}),
        ...numericOptions(options),
        hostedHiddenPosts: options.hostedHiddenPosts,
        ...(options.admin === undefined ? {} : { admin: options.admin }),
        ...perimeterOptions(options),
        ...(redis === undefined
          ? {}
          : {
              store: redis.url,
              redisPrefix: redis.prefix,
              resetStore: redis.resetStore,
              allowEviction: redis.allowEviction,
            }),
        ...(options.state === undefined ? {} : { state: options.state }),
        ...replay,
        logger,
      },
      instance,
    );
  } catch (error) {
    const storeFailure = storeExit(error);
    if (storeFailure) throw storeFailure;
    if (error instanceof StreamPostsError && (error.code === 'invalid-state' || error.code === 'state-locked')) {
      throw usageError(`--state: ${error.message}`, { cause: error });
    }
    if (error instanceof StreamPostsError && error.code === 'invalid-recording') {
      throw usageError(`--replay: ${error.message}`, { cause: error });
    }
    const usage = flagError(error);
    if (usage) throw usage;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new ExitError(
        EXIT.failed,
        `port ${options.port} on ${options.host} is already in use; choose another with --port (0 picks a free one)`,
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new ExitError(EXIT.failed, `cannot listen on ${options.host}:${options.port} (${code})`);
    }
    throw error;
  }
  const playback =
    options.scenario === undefined
      ? undefined
      : await playScenario(server, options.scenario, {
          ...(options.speed === undefined ? {} : { speed: options.speed }),
          start: options.scenarioStart ?? (exec === undefined ? 'at-start' : 'first-subscriber'),
        });
  const at = servedAt(server);
  if (cluster.isWorker) reportListening(at);
  else announce(at);
  // Started first, so a scenario already over still interrupts a command that has begun.
  const waiting = signals.wait(
    exec === undefined
      ? undefined
      : () => runChild(exec, execEnvironment(at, seed, options.adminToken), options.exitAfterScenario === true),
  );
  let scenarioStopped = false;
  if (playback && options.exitAfterScenario) {
    void playback.done.then(() => {
      scenarioStopped = !signals.requested;
      signals.terminate();
    });
  }
  let exitCode = await waiting;
  // The --exec command ended by the SIGTERM the scenario's end sent it: a normal end.
  if (scenarioStopped && exitCode === 128 + 15) exitCode = EXIT.ok;
  logger.log('info', 'shutting down', { connections: (await server.state()).connections });
  const report = server.replayReport();
  if (report) {
    process.stderr.write(formatReplayReport(report));
    if (options.replayStrict && replayFailed(report) && exitCode === EXIT.ok) exitCode = EXIT.failed;
  }
  try {
    await server.close();
  } catch (error) {
    if (options.state === undefined) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ExitError(EXIT.failed, `--state: the state could not be saved to ${options.state} (${reason})`, {
      cause: error,
    });
  }
  // The channel to the primary of --workers would keep this process alive.
  if (cluster.isWorker) process.disconnect();
  return exitCode;
}
