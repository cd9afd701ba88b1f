import { spawn } from 'node:child_process';
import { readTextFile } from '../client/files.js';
import { formatServeBanner, keyVariable } from '../render/serve-banner.js';
import { DEMO_SEED } from '../server/demo-seed.js';
import { createLogger, silentLogger, type LogFormat } from '../server/logger.js';
import { parseSeedText, SeedError, type Seed } from '../server/seed.js';
import { startServer, type StreamPostsServer } from '../server/server.js';
import { EXIT, ExitError, usageError } from './exit.js';

export interface ServeOptions {
  host: string;
  port: number;
  seed?: string;
  tlsCert?: string;
  tlsKey?: string;
  idempotencyWindow: number;
  rateLimit: number;
  maxBuffered: number;
  keepAlive: number;
  logFormat: LogFormat;
  quiet: boolean;
  admin?: boolean;
  exec?: string;
  color: boolean;
}

async function loadSeed(path: string | undefined): Promise<Seed> {
  if (path === undefined) return DEMO_SEED;
  try {
    return parseSeedText(await readTextFile(path, 'seed file'));
  } catch (error) {
    if (error instanceof SeedError) throw usageError(`invalid seed file ${path}: ${error.message}`);
    throw error;
  }
}

/** Environment for `--exec`: where the server is and every key of the seed. */
function execEnvironment(server: StreamPostsServer, seed: Seed): Record<string, string> {
  const env: Record<string, string> = {
    STREAM_POSTS_URL: server.url,
    STREAM_POSTS_HTTP_URL: server.httpUrl,
  };
  const firstReader = seed.users.find((user) => user.follows.length > 0) ?? seed.users[0]!;
  env['STREAM_POSTS_API_KEY'] = firstReader.readerKey;
  for (const user of seed.users) env[keyVariable('reader', user.id)] = user.readerKey;
  for (const stream of seed.streams) env[keyVariable('stream', stream.id)] = stream.key;
  if (server.adminEnabled) env['STREAM_POSTS_ADMIN_URL'] = `${server.httpUrl}/_admin`;
  return env;
}

function printStartup(out: NodeJS.WritableStream, server: StreamPostsServer, seed: Seed, options: ServeOptions): void {
  const seedSource = options.seed ?? 'built-in demo seed';
  if (options.logFormat === 'json') {
    const line = (value: object) => out.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', ...value })}\n`);
    line({ msg: 'listening', url: server.url, httpUrl: server.httpUrl, admin: server.adminEnabled, seed: seedSource });
    for (const user of seed.users) line({ msg: 'reader key', user: user.id, name: user.name, key: user.readerKey });
    for (const stream of seed.streams) line({ msg: 'stream key', stream: stream.id, name: stream.name, key: stream.key });
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
}

function runChild(command: string, env: Record<string, string>): { done: Promise<number>; kill: (signal: NodeJS.Signals) => void } {
  const child = spawn(command, { shell: true, stdio: 'inherit', env: { ...process.env, ...env } });
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== null) resolve(code);
      else resolve(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  });
  return { done, kill: (signal) => child.kill(signal) };
}

/** Runs `serve` until a signal (or the --exec command) ends it; resolves to the exit code. */
export async function serve(options: ServeOptions): Promise<number> {
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
    throw usageError('--tls-cert and --tls-key go together: give both or neither');
  }
  const seed = await loadSeed(options.seed);
  const tls =
    options.tlsCert !== undefined && options.tlsKey !== undefined
      ? { cert: await readTextFile(options.tlsCert, 'TLS certificate'), key: await readTextFile(options.tlsKey, 'TLS key') }
      : undefined;
  // Handlers go in before anything is printed: a script that reads the
  // listening line and signals at once must still get a clean stop.
  let child: ReturnType<typeof runChild> | undefined;
  let stopRequested = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      stopRequested = true;
      if (child) child.kill(signal);
      else resolve(EXIT.ok);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  // With --exec the command owns stdout; the server speaks on stderr.
  const out = options.exec === undefined ? process.stdout : process.stderr;
  const logger = options.quiet ? silentLogger : createLogger(options.logFormat, out);
  let server: StreamPostsServer;
  try {
    server = await startServer({
      seed,
      host: options.host,
      port: options.port,
      ...(tls ? { tls } : {}),
      idempotencyWindowMs: options.idempotencyWindow,
      rateLimit: options.rateLimit,
      maxBufferedBytes: options.maxBuffered,
      keepAliveMs: options.keepAlive,
      ...(options.admin === undefined ? {} : { admin: options.admin }),
      logger,
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new ExitError(EXIT.failed, `port ${options.port} on ${options.host} is already in use; choose another with --port (0 picks a free one)`);
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new ExitError(EXIT.failed, `cannot listen on ${options.host}:${options.port} (${code})`);
    }
    if (tls && error instanceof Error && /PEM|key|certificate/i.test(error.message)) {
      throw usageError(`cannot use the TLS certificate and key: ${error.message}`);
    }
    throw error;
  }
  if (!options.quiet || options.exec === undefined) {
    // The URL line is printed even with --quiet: scripts read it to find a port chosen with --port 0.
    if (options.quiet) out.write(`listening on ${server.url}\n`);
    else printStartup(out, server, seed, options);
  }

  let exitCode: number;
  if (options.exec !== undefined && !stopRequested) {
    child = runChild(options.exec, execEnvironment(server, seed));
    exitCode = await child.done.catch((error: Error) => {
      process.stderr.write(`stream-posts serve: cannot run --exec command: ${error.message}\n`);
      return EXIT.failed;
    });
  } else {
    exitCode = await stopped;
  }
  logger.log('info', 'shutting down', { connections: server.connectionCount });
  await server.close();
  return exitCode;
}
