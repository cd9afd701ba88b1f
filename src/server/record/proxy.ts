// record/: `serve --record FILE --upstream URL`. A client connects here as it would to the
// upstream; every WebSocket connection and REST request is passed to the upstream and its
// answers back, unchanged, and recorded with every secret replaced. On close the recording is
// checked once more for secrets and saved atomically.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { answerBodyError, sendError } from '../http-util.js';
import { createPerimeter } from '../http/perimeter.js';
import { hostForUrl, refuseUpgrade } from '../http/server.js';
import type { Logger } from '../logger.js';
import { Recorder } from './recorder.js';
import type { ProxyTrace } from './forwarding.js';
import { isAdminPath } from './handshake.js';
import { relayRequest } from './rest-relay.js';
import { checkNoSecret, REDACTED_FIELD, redactFields, serializeRecording, writeAtomically } from './save.js';
import { MAX_PROXIED_FRAME, WsRelay } from './ws-relay.js';

export { SecretInRecordingError } from './save.js';
export { JsonPathError, parseJsonPath } from './json-path.js';
export type { ProxiedFrame, ProxyTrace } from './forwarding.js';

export interface RecordingProxyOptions {
  host: string;
  port: number;
  tls: { cert: string | Buffer; key: string | Buffer } | undefined;
  allowedHosts: readonly string[] | 'all';
  allowedOrigins: readonly string[];
  /** Where the recording is saved on close. */
  file: string;
  /** The upstream's origin, `ws(s)://` or `http(s)://`, checked (no path, query or credentials). */
  upstream: URL;
  /** Bytes of recording kept; past it recording stops and proxying goes on. */
  maxBytes: number;
  /** Proxied WebSocket connections and REST requests open at once. */
  maxConnections: number;
  /** `--record-redact` paths, checked. */
  redact: readonly string[];
  maxBufferedBytes: number;
  bodyTimeoutMs: number;
  headersTimeoutMs: number;
  logger: Logger;
  trace: ProxyTrace | undefined;
  toolVersion: string;
}

/** How long a peer has to answer the close on shutdown before it is dropped (as the service allows). */
const CLOSE_DEADLINE_MS = 2000;

/** An upgrade refused here, not by the upstream: a JSON error as `serve`'s own refusals have. */
function refuse(socket: Duplex, status: number, statusText: string, code: string, message: string): void {
  refuseUpgrade(socket, status, statusText, JSON.stringify({ error: { code, message } }));
}

export class RecordingProxy {
  readonly #options: RecordingProxyOptions;
  readonly #recorder: Recorder;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #relays = new Set<WsRelay>();
  readonly #chosen = new WeakMap<IncomingMessage, string>();
  readonly #ws: string;
  readonly #httpOrigin: string;
  #requests = 0;
  #traceIds = 0;
  #address: AddressInfo | undefined;
  #closing: Promise<void> | undefined;
  #drained: (() => void) | undefined;

  constructor(options: RecordingProxyOptions) {
    this.#options = options;
    const secure = options.upstream.protocol === 'wss:' || options.upstream.protocol === 'https:';
    this.#ws = `${secure ? 'wss' : 'ws'}://${options.upstream.host}`;
    this.#httpOrigin = `${secure ? 'https' : 'http'}://${options.upstream.host}`;
    this.#recorder = new Recorder({
      upstream: this.#ws,
      toolVersion: options.toolVersion,
      maxBytes: options.maxBytes,
      logger: options.logger,
    });
    const checkPerimeter = createPerimeter({
      bindHost: options.host,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
    });
    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      autoPong: false,
      perMessageDeflate: false,
      maxPayload: MAX_PROXIED_FRAME,
      // The bytes are passed on as they came: the upstream checks them.
      skipUTF8Validation: true,
      handleProtocols: (_offered, req) => this.#chosen.get(req) || false,
    });
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const refusal = checkPerimeter(req.headers);
      if (refusal) return sendError(res, 'forbidden', refusal.reason, refusal.status);
      this.#request(req, res).catch((error: unknown) => {
        if (answerBodyError(res, error)) return;
        options.logger.log('error', 'internal error', { reason: (error as Error).message });
        if (!res.headersSent) sendError(res, 'internal', 'the recording proxy failed to pass this request on');
        else res.destroy();
      });
    };
    this.#http = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest)
      : createHttpServer(onRequest);
    this.#http.headersTimeout = options.headersTimeoutMs;
    this.#http.requestTimeout = options.headersTimeoutMs + options.bodyTimeoutMs;
    this.#http.keepAliveTimeout = 5_000;
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      const refusal = checkPerimeter(req.headers);
      if (refusal) return refuse(socket, refusal.status, 'Forbidden', 'forbidden', refusal.reason);
      if (this.#closing)
        return refuse(socket, 503, 'Service Unavailable', 'unavailable', 'the recording proxy is shutting down');
      if (isAdminPath(new URL(req.url ?? '/', 'http://proxy').pathname)) {
        this.#learnAdmin(req);
        return refuse(socket, 404, 'Not Found', 'not-found', ADMIN_NOT_FORWARDED);
      }
      if (this.#full()) return refuse(socket, 503, 'Service Unavailable', 'limit-exceeded', this.#fullMessage());
      const relay = new WsRelay(
        {
          recorder: this.#recorder,
          wss: this.#wss,
          chosen: this.#chosen,
          upstream: this.#ws,
          maxBufferedBytes: options.maxBufferedBytes,
          logger: options.logger,
          trace: options.trace,
          closed: (done) => {
            this.#relays.delete(done);
            this.#checkDrained();
          },
        },
        req,
        socket,
        head,
        (this.#traceIds += 1),
      );
      this.#relays.add(relay);
    });
  }

  /** An admin token is never forwarded, but it is a secret the recording is scanned for. */
  #learnAdmin(req: IncomingMessage): void {
    const authorization = req.headers.authorization;
    if (authorization !== undefined) this.#recorder.secrets.admin(authorization.replace(/^\s*bearer\s+/i, '').trim());
  }

  #full(): boolean {
    return this.#relays.size + this.#requests >= this.#options.maxConnections;
  }

  #fullMessage(): string {
    return `the recording proxy already passes ${this.#options.maxConnections} connections and requests, its most (--record-max-connections)`;
  }

  async #request(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://proxy');
    if (isAdminPath(url.pathname)) {
      this.#learnAdmin(req);
      return sendError(res, 'not-found', ADMIN_NOT_FORWARDED, 404);
    }
    if (this.#full()) return sendError(res, 'limit-exceeded', this.#fullMessage(), 503);
    this.#requests += 1;
    try {
      await relayRequest(
        {
          recorder: this.#recorder,
          upstream: this.#httpOrigin,
          bodyTimeoutMs: this.#options.bodyTimeoutMs,
          trace: this.#options.trace,
          logger: this.#options.logger,
        },
        req,
        res,
        (this.#traceIds += 1),
      );
    } finally {
      this.#requests -= 1;
      this.#checkDrained();
    }
  }

  #checkDrained(): void {
    if (this.#relays.size === 0 && this.#requests === 0) this.#drained?.();
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#http.once('error', reject);
      this.#http.listen(this.#options.port, this.#options.host, () => {
        this.#http.off('error', reject);
        resolve();
      });
    });
    this.#address = this.#http.address() as AddressInfo;
    return this;
  }

  get port(): number {
    if (!this.#address) throw new Error('the recording proxy is not listening yet');
    return this.#address.port;
  }

  get url(): string {
    return `${this.#options.tls ? 'wss' : 'ws'}://${hostForUrl(this.#options.host)}:${this.port}`;
  }

  get httpUrl(): string {
    return `${this.#options.tls ? 'https' : 'http'}://${hostForUrl(this.#options.host)}:${this.port}`;
  }

  /** Proxied WebSocket connections open now. */
  get connectionCount(): number {
    return this.#relays.size;
  }

  /**
   * Stops accepting, closes every client with 1001 (and its upstream connection), then saves
   * the recording. Rejects with SecretInRecordingError (nothing written) when the last scan
   * finds a secret. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.#http.close(() => resolve()));
    const drained = new Promise<void>((resolve) => {
      this.#drained = resolve;
    });
    for (const relay of this.#relays) relay.shutdown();
    this.#checkDrained();
    const deadline = setTimeout(() => {
      for (const relay of this.#relays) relay.terminate();
    }, CLOSE_DEADLINE_MS);
    await drained;
    clearTimeout(deadline);
    this.#http.closeAllConnections();
    await stopped;
    this.#wss.close();
    await this.#save();
  }

  /** Checks and writes the recording, once every connection is over. */
  async #save(): Promise<void> {
    const recording = this.#recorder.document();
    const fields = redactFields(recording, this.#options.redact);
    recording.meta.redactions.push(
      ...fields
        .filter(({ count }) => count > 0)
        .map(({ path, count }) => ({ kind: 'field' as const, placeholder: REDACTED_FIELD, count, path })),
    );
    const text = serializeRecording(recording);
    checkNoSecret(recording, text, this.#recorder.secrets.values());
    await writeAtomically(this.#options.file, text);
    this.#options.logger.log('info', 'recording saved', {
      file: this.#options.file,
      connections: recording.connections.length,
      requests: recording.requests.length,
      truncated: recording.meta.truncated,
    });
  }
}

const ADMIN_NOT_FORWARDED = 'the recording proxy never forwards /_admin: admin tokens stay on this machine';

/** Starts a recording proxy; resolves once the port is bound. */
export function startRecordingProxy(options: RecordingProxyOptions): Promise<RecordingProxy> {
  return new RecordingProxy(options).listen();
}
