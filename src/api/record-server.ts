// startServer({ record, upstream }): a recording proxy instead of the simulated service. Its
// options are startServer's (checked by its table) less those of the simulated service; the
// proxy itself is src/server/record/.
import { access, constants } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import packageJson from '../../package.json' with { type: 'json' };
import { DEFAULTS } from '../server/defaults.js';
import { silentLogger } from '../server/logger.js';
import type { RecordingProxy } from '../server/record/proxy.js';
import { SecretInRecordingError, startRecordingProxy } from '../server/record/proxy.js';
import { StreamPostsError } from './errors.js';
import { optionError } from './options.js';
import type { StartServerOptionName } from './serve-options.js';
import { checkStartOptions, type StartServerOptions } from './start-options.js';

export type { ProxiedFrame } from '../server/record/proxy.js';

/** What a recording proxy takes besides `record` and `upstream`; anything else is the upstream's business. */
const RECORD_OPTIONS: readonly StartServerOptionName[] = [
  'record',
  'upstream',
  'recordMaxBytes',
  'recordMaxConnections',
  'recordRedact',
  'onProxiedFrame',
  'host',
  'port',
  'tls',
  'allowedHosts',
  'allowedOrigins',
  'maxBufferedBytes',
  'bodyTimeoutMs',
  'headersTimeoutMs',
  'logger',
];
/** The options that mean something only to a recording proxy. */
const RECORD_ONLY: readonly StartServerOptionName[] = RECORD_OPTIONS.slice(1, 6);

/** Whether startServer was asked for a recording proxy; an option of one without `record` is refused by name. */
export function wantsRecording(given: Record<string, unknown>): boolean {
  if (given['record'] !== undefined) return true;
  const stray = RECORD_ONLY.find((name) => given[name] !== undefined);
  if (stray) throw optionError('type', stray, `${stray} needs record: the file a recording proxy saves to`);
  return false;
}

/** The upstream's origin: ws(s):// or http(s)://, no credentials, query or path but `/v1/ws`. */
export function checkUpstream(text: string | undefined): URL {
  if (text === undefined || text === '')
    throw optionError(
      'type',
      'upstream',
      'upstream is required with record: the service to pass everything to, e.g. wss://api.example.com',
    );
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw optionError(
      'type',
      'upstream',
      `upstream must be a URL such as wss://api.example.com or ws://127.0.0.1:8787, got "${text}"`,
    );
  }
  const bad = !['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol)
    ? `upstream must be ws://, wss://, http:// or https://, got ${url.protocol}`
    : url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== ''
      ? 'upstream is an origin only: no credentials, query or fragment (a key goes with each client, never here)'
      : !['/', '/v1/ws', '/v1/ws/'].includes(url.pathname)
        ? `upstream is an origin only (wss://host[:port]), got the path ${url.pathname}`
        : undefined;
  if (bad) throw optionError('type', 'upstream', bad);
  return new URL(url.origin.replace(/^http/, 'ws'));
}

/** The recording's folder must take the file at the end: refused at start, not after an hour of recording. */
async function checkRecordFile(file: string): Promise<string> {
  const path = resolve(file);
  try {
    await access(dirname(path), constants.W_OK);
  } catch (error) {
    throw optionError(
      'type',
      'record',
      `record must be a file in a folder this process can write to, and ${file} is not (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`,
      error,
    );
  }
  return path;
}

/** The library's handle on a recording proxy (`startServer({ record, upstream })`). */
export class RecordingServer {
  readonly #proxy: RecordingProxy;
  /** The absolute path the recording is saved to on `close()`. */
  readonly file: string;

  /** @internal */
  constructor(proxy: RecordingProxy, file: string) {
    this.#proxy = proxy;
    this.file = file;
  }

  /** `ws://host:port`: give it to a client instead of the upstream's address. */
  get url(): string {
    return this.#proxy.url;
  }

  get httpUrl(): string {
    return this.#proxy.httpUrl;
  }

  get port(): number {
    return this.#proxy.port;
  }

  /** Proxied WebSocket connections open now. */
  get connectionCount(): number {
    return this.#proxy.connectionCount;
  }

  /**
   * Stops accepting, closes every client with 1001, then saves the recording (temporary file,
   * then rename). Rejects with StreamPostsError `secret-in-recording` (its `path` the JSON path
   * of the place, never the value) when the last scan finds a secret: nothing is written.
   */
  async close(): Promise<void> {
    try {
      await this.#proxy.close();
    } catch (error) {
      if (error instanceof SecretInRecordingError)
        throw new StreamPostsError('secret-in-recording', error.message, { cause: error, path: error.place });
      throw error;
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Starts a recording proxy from startServer's options (`record` given). */
export async function startRecording(options: StartServerOptions): Promise<RecordingServer> {
  const given = options as Record<string, unknown>;
  const other = Object.keys(given).find(
    (name) => given[name] !== undefined && !RECORD_OPTIONS.includes(name as StartServerOptionName),
  );
  if (other)
    throw optionError(
      'type',
      other,
      `${other} does not apply to a recording proxy (record): the upstream is the service`,
    );
  const checked = checkStartOptions(options);
  const file = await checkRecordFile(checked.record!);
  const upstream = checkUpstream(checked.upstream);
  const { allowedHosts = [], allowedOrigins = [] } = checked;
  const proxy = await startRecordingProxy({
    host: checked.host ?? DEFAULTS.host,
    port: checked.port ?? DEFAULTS.port,
    tls: checked.tls,
    allowedHosts,
    allowedOrigins: [...allowedOrigins],
    file,
    upstream,
    maxBytes: checked.recordMaxBytes ?? DEFAULTS.recordMaxBytes,
    maxConnections: checked.recordMaxConnections ?? DEFAULTS.recordMaxConnections,
    redact: [...(checked.recordRedact ?? [])],
    maxBufferedBytes: checked.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes,
    bodyTimeoutMs: checked.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
    headersTimeoutMs: checked.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
    logger: checked.logger ?? silentLogger,
    trace: checked.onProxiedFrame,
    toolVersion: packageJson.version,
  });
  return new RecordingServer(proxy, file);
}
