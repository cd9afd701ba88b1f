// `serve --record FILE --upstream URL`: the recording proxy, run until a signal or the --exec
// command ends it, then saved. serve.ts hands over as soon as it sees --record.
import type { Writable } from 'node:stream';
import { type RecordingServer, StreamPostsError } from '../../index.js';
import { startRecording, createLogger, type LogFormat } from '../../api/internal.js';
import { formatTraceLine } from '../../render/trace.js';
import { EXIT, ExitError, usageError } from '../exit.js';
import { readTlsFiles } from '../files.js';
import { StopSignals, type ExecChild } from '../serve-signals.js';

/** The flags of `serve` a recording proxy reads (serve.ts's ServeOptions has them all). */
export interface RecordFlags {
  record?: string;
  upstream?: string;
  recordMax: number;
  recordMaxConnections: number;
  recordRedact?: string[];
  trace?: boolean;
  host: string;
  port: number;
  tlsCert?: string;
  tlsKey?: string;
  maxBuffered: number;
  bodyTimeout: number;
  headersTimeout: number;
  allowedHosts?: string[] | undefined;
  allowOrigin?: string[] | undefined;
  logFormat: LogFormat;
  quiet: boolean;
  verbose?: boolean;
  exec?: string;
  seed?: string;
  state?: string;
  scenario?: string;
  replay?: string;
  store?: string;
  workers?: number;
  adminToken?: string | undefined;
  admin?: boolean;
}

/** What serve.ts lends: its reading of startServer's errors as flags, and how it runs --exec. */
export interface ServeParts {
  flagError(error: unknown): ExitError | undefined;
  runChild(command: string, env: Record<string, string>): ExecChild;
  /** Where the listening lines (stdout, or stderr with --exec), the log and the trace go. */
  stdout: Writable;
  stderr: Writable;
}

/** Flags of the simulated service that mean nothing to a proxy: the upstream is the service. */
function checkFlags(options: RecordFlags): string {
  if (options.record === undefined) {
    const without =
      options.upstream !== undefined ? '--upstream' : options.recordRedact ? '--record-redact' : '--trace';
    throw usageError(`${without} needs --record FILE (serve records only as a proxy of --upstream)`);
  }
  if (options.upstream === undefined)
    throw usageError('--record needs --upstream URL: the service to pass everything to');
  const stray = [
    options.seed !== undefined && '--seed',
    options.state !== undefined && '--state',
    options.scenario !== undefined && '--scenario',
    options.replay !== undefined && '--replay',
    options.store !== undefined && options.store !== 'memory' && '--store',
    (options.workers ?? 1) > 1 && '--workers',
    options.adminToken !== undefined && '--admin-token',
    options.admin === true && '--admin',
  ].find((flag) => flag !== false);
  if (stray)
    throw usageError(`${stray} cannot be combined with --record: the upstream is the service, serve only passes it on`);
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined))
    throw usageError('--tls-cert and --tls-key go together: give both or neither');
  return options.record;
}

async function start(
  options: RecordFlags,
  record: string,
  parts: ServeParts,
  log: ReturnType<typeof createLogger>,
): Promise<RecordingServer> {
  const tls = await readTlsFiles(options.tlsCert, options.tlsKey);
  try {
    return await startRecording({
      record,
      upstream: options.upstream!,
      host: options.host,
      port: options.port,
      ...(tls ? { tls } : {}),
      recordMaxBytes: options.recordMax,
      recordMaxConnections: options.recordMaxConnections,
      ...(options.recordRedact ? { recordRedact: options.recordRedact } : {}),
      maxBufferedBytes: options.maxBuffered,
      bodyTimeoutMs: options.bodyTimeout,
      headersTimeoutMs: options.headersTimeout,
      ...(options.allowedHosts
        ? { allowedHosts: options.allowedHosts.includes('all') ? 'all' : options.allowedHosts }
        : {}),
      ...(options.allowOrigin ? { allowedOrigins: options.allowOrigin } : {}),
      logger: log,
      ...(options.trace
        ? {
            onProxiedFrame: ({ connection, direction, text }) =>
              parts.stderr.write(formatTraceLine(performance.now(), direction, `#${connection} ${text}`)),
          }
        : {}),
    });
  } catch (error) {
    const usage = parts.flagError(error);
    if (usage) throw usage;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new ExitError(
        EXIT.failed,
        `port ${options.port} on ${options.host} is already in use; choose another with --port (0 picks a free one)`,
      );
    throw error;
  }
}

/** Runs the recording proxy until a signal (or the --exec command) ends it, then saves; resolves to the exit code. */
export async function serveRecording(options: RecordFlags, parts: ServeParts): Promise<number> {
  const record = checkFlags(options);
  const signals = new StopSignals();
  const log = createLogger(
    options.logFormat,
    parts.stderr,
    Date.now,
    options.quiet ? 'warn' : options.verbose === true ? 'debug' : 'info',
  );
  const server = await start(options, record, parts, log);
  const out = options.exec === undefined ? parts.stdout : parts.stderr;
  if (!(options.quiet && options.exec !== undefined)) {
    if (options.logFormat === 'json')
      out.write(
        `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'listening', url: server.url, httpUrl: server.httpUrl, recording: server.file, upstream: new URL(options.upstream!).origin })}\n`,
      );
    else {
      out.write(`listening on ${server.url}\n`);
      if (!options.quiet)
        out.write(`recording ${new URL(options.upstream!).origin} into ${server.file} (saved when serve stops)\n`);
    }
  }
  const exec = options.exec;
  const exitCode = await signals.wait(
    exec === undefined
      ? undefined
      : () => parts.runChild(exec, { STREAM_POSTS_URL: server.url, STREAM_POSTS_HTTP_URL: server.httpUrl }),
  );
  log.log('info', 'shutting down', { connections: server.connectionCount });
  try {
    await server.close();
  } catch (error) {
    if (error instanceof StreamPostsError && error.code === 'secret-in-recording')
      throw new ExitError(EXIT.failed, `--record: ${error.message}`, { cause: error });
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ExitError(EXIT.failed, `--record: the recording could not be saved to ${server.file} (${reason})`, {
      cause: error,
    });
  }
  return exitCode;
}
