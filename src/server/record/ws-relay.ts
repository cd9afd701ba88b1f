// One proxied WebSocket connection: the upstream's handshake first (its refusal passed back as
// it was sent), then frames, pings, pongs and the close both ways, unchanged, each recorded.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { type WebSocketServer } from 'ws';
import { CLOSE_GOING_AWAY, CLOSE_SLOW_CONSUMER } from '../../protocol/close-codes.js';
import type { Logger } from '../logger.js';
import { closeSlowConsumer, SLOW_CONSUMER_REASON } from '../ws/outbound.js';
import type { ConnectionRecord, Recorder } from './recorder.js';
import { forwardedHeaders, type ProxyTrace } from './forwarding.js';
import { learnRequest, recordedHead, responseHeaders, transportOf } from './handshake.js';

/** The most of a refused upgrade's body passed back and recorded. */
const MAX_REFUSAL_BODY = 64 * 1024;
/** The most one frame may hold, either way (the upstream applies its own limit too). */
export const MAX_PROXIED_FRAME = 16 * 1024 * 1024;
const HANDSHAKE_TIMEOUT_MS = 10_000;
const SHUTDOWN_REASON = 'server shutting down';

export interface RelayContext {
  recorder: Recorder;
  /** The server side, with `autoPong` off: a ping is the peer's to answer. */
  wss: WebSocketServer;
  /** The subprotocol the upstream chose for a request, read by the server's `handleProtocols`. */
  chosen: WeakMap<IncomingMessage, string>;
  /** `ws://host:port` or `wss://…` of the upstream. */
  upstream: string;
  maxBufferedBytes: number;
  logger: Logger;
  trace: ProxyTrace | undefined;
  closed(relay: WsRelay): void;
}

/** Whether a close code may be sent in a close frame (1005, 1006 and 1015 only ever describe one). */
function sendable(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999)
  );
}

/** Ends `ws` as the other side ended: the same code and reason, no code for 1005, a cut for 1006. */
function passClose(ws: WebSocket, code: number, reason: Buffer | string): void {
  if (ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) return;
  if (ws.readyState === WebSocket.CONNECTING || !(sendable(code) || code === 1005)) ws.terminate();
  else if (code === 1005) ws.close();
  else ws.close(code, reason);
}

export class WsRelay {
  readonly #context: RelayContext;
  readonly #record: ConnectionRecord | undefined;
  readonly #upstream: WebSocket;
  readonly #trace: ((direction: 'sent' | 'received', text: string) => void) | undefined;
  #bot: WebSocket | undefined;
  /** The bot's socket, corked for the rest of a turn once a frame is written to it (as `serve` corks). */
  readonly #socket: Duplex;
  #corked = false;
  /** The address, keys as their placeholders, for the log. */
  readonly #path: string;
  /** The upstream's frames that came before the bot's handshake was done. */
  #early: [Buffer, boolean][] = [];
  /** Set by the first close, from either side: the other side's answer is its echo. */
  #ended = false;
  /** Closed sides (both, once wired) or an answer without a connection: then it leaves the proxy's count. */
  #done = 0;
  #released = false;

  constructor(context: RelayContext, req: IncomingMessage, socket: Duplex, head: Buffer, traceId: number) {
    this.#context = context;
    this.#socket = socket;
    const { recorder } = context;
    const url = new URL(req.url ?? '/', 'http://proxy');
    learnRequest(recorder.secrets, url, req.headers);
    const start = recorder.now();
    this.#path = recorder.secrets.scrub((req.url ?? '/').split('?')[0]!);
    this.#record = recorder.connection(
      transportOf(url),
      recordedHead(recorder.secrets, req.url ?? '/', req.headers),
      start,
    );
    const trace = context.trace;
    this.#trace =
      trace && ((direction, text) => trace({ connection: traceId, direction, text: recorder.secrets.scrub(text) }));
    this.#trace?.('sent', `UPGRADE ${req.url ?? '/'}`);
    const protocols = (req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    this.#upstream = new WebSocket(`${context.upstream}${req.url ?? '/'}`, protocols, {
      headers: forwardedHeaders(req.headers, 'upgrade'),
      autoPong: false,
      perMessageDeflate: false,
      followRedirects: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      maxPayload: MAX_PROXIED_FRAME,
      // The bytes are passed on as they came: the bot's own client checks them.
      skipUTF8Validation: true,
    });
    const upstream = this.#upstream;
    // The bot gave up before the upstream answered.
    const abandon = () => {
      upstream.terminate();
      this.#release();
    };
    socket.once('close', abandon);
    upstream.on('message', (data: Buffer, binary: boolean) => {
      if (this.#bot) this.#fromUpstream(data, binary);
      else this.#early.push([data, binary]);
    });
    upstream.once('unexpected-response', (_request, res) => {
      socket.off('close', abandon);
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_REFUSAL_BODY) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('error', () => socket.destroy());
      res.on('end', () => {
        const body = Buffer.concat(chunks).subarray(0, MAX_REFUSAL_BODY);
        this.#refuse(socket, res.statusCode ?? 502, res.statusMessage ?? '', res.headers, body);
        upstream.terminate();
      });
    });
    upstream.once('open', () => {
      socket.off('close', abandon);
      context.chosen.set(req, upstream.protocol);
      context.wss.handleUpgrade(req, socket, head, (bot) => this.#wire(bot));
    });
    upstream.on('error', (error: Error) => {
      if (this.#bot || this.#released || socket.destroyed) return;
      // No answer at all from the upstream (refused, reset, unknown name, timed out).
      socket.off('close', abandon);
      const body = Buffer.from(
        JSON.stringify({
          error: { code: 'unavailable', message: `the upstream could not be reached: ${error.message}` },
        }),
      );
      this.#refuse(socket, 502, 'Bad Gateway', { 'content-type': 'application/json; charset=utf-8' }, body);
    });
  }

  #refuse(socket: Duplex, status: number, statusText: string, headers: IncomingMessage['headers'], body: Buffer): void {
    const { recorder } = this.#context;
    this.#record?.refused(status, responseHeaders(recorder.secrets, headers), recorder.body('server', body));
    this.#trace?.('received', `${status} ${body.toString('utf8')}`);
    const lines = [`HTTP/1.1 ${status} ${statusText}`];
    for (const [name, value] of Object.entries(forwardedHeaders(headers, 'response')))
      for (const one of [value].flat()) lines.push(`${name}: ${one}`);
    lines.push(`content-length: ${body.length}`, 'connection: close', '', '');
    if (!socket.destroyed) socket.end(Buffer.concat([Buffer.from(lines.join('\r\n')), body]));
    this.#release();
  }

  #wire(bot: WebSocket): void {
    this.#bot = bot;
    const upstream = this.#upstream;
    this.#record?.chose(upstream.protocol);
    bot.on('error', () => {});
    upstream.on('error', () => {});
    for (const [data, binary] of this.#early) this.#fromUpstream(data, binary);
    this.#early = [];
    bot.on('message', (data: Buffer, binary: boolean) => {
      this.#record?.frame('client', data, binary);
      this.#trace?.('sent', binary ? `(binary, ${data.length} bytes)` : data.toString('utf8'));
      this.#send(upstream, data, binary);
    });
    upstream.on('ping', (data: Buffer) => this.#control('server', 'ping', data, () => bot.ping(data)));
    upstream.on('pong', (data: Buffer) => this.#control('server', 'pong', data, () => bot.pong(data)));
    bot.on('ping', (data: Buffer) => this.#control('client', 'ping', data, () => upstream.ping(data)));
    bot.on('pong', (data: Buffer) => this.#control('client', 'pong', data, () => upstream.pong(data)));
    upstream.on('close', (code: number, reason: Buffer) => {
      this.#closed('server', code, reason, bot);
      this.#finish();
    });
    bot.on('close', (code: number, reason: Buffer) => {
      this.#closed('client', code, reason, upstream);
      this.#finish();
    });
  }

  #fromUpstream(data: Buffer, binary: boolean): void {
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(this.#uncork);
    }
    this.#record?.frame('server', data, binary);
    this.#trace?.('received', binary ? `(binary, ${data.length} bytes)` : data.toString('utf8'));
    this.#send(this.#bot!, data, binary);
  }

  #control(from: 'client' | 'server', op: 'ping' | 'pong', data: Buffer, pass: () => void): void {
    this.#record?.control(from, op, data);
    if ((from === 'client' ? this.#upstream : this.#bot)?.readyState === WebSocket.OPEN) pass();
  }

  /**
   * Passes a frame on; a peer that stops reading is dropped as `serve` drops a slow reader
   * (1013) rather than held in memory without bound.
   */
  #send(to: WebSocket, data: Buffer, binary: boolean): void {
    if (to.readyState !== WebSocket.OPEN) return;
    to.send(data, { binary });
    if (to.bufferedAmount <= this.#context.maxBufferedBytes || this.#ended) return;
    this.#context.logger.log('warn', 'proxied connection closed: a side stopped reading', {
      side: to === this.#bot ? 'client' : 'upstream',
      code: CLOSE_SLOW_CONSUMER,
    });
    this.#ended = true;
    this.#record?.close('server', CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON);
    // The side that stopped reading gets serve's treatment: its close frame queued behind what it
    // did not read, its socket dropped after a grace.
    const bot = this.#bot!;
    if (to === bot) closeSlowConsumer(bot);
    else bot.close(CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON);
    if (to === this.#upstream) closeSlowConsumer(this.#upstream);
    else this.#upstream.close(CLOSE_GOING_AWAY, 'the client stopped reading');
  }

  #closed(from: 'client' | 'server', code: number, reason: Buffer, other: WebSocket): void {
    if (this.#ended) return;
    this.#ended = true;
    const text = reason.toString('utf8');
    this.#record?.close(from, code, text);
    this.#context.logger.log('info', 'proxied connection closed', {
      path: this.#path,
      by: from === 'client' ? 'client' : 'upstream',
      code,
    });
    this.#trace?.(from === 'client' ? 'sent' : 'received', `close ${code}${text === '' ? '' : ` ${text}`}`);
    passClose(other, code, reason);
  }

  readonly #uncork = (): void => {
    this.#corked = false;
    this.#socket.uncork();
  };

  /** On shutdown: the bot gets the 1001 `serve` sends, and the upstream hears it is going away. */
  shutdown(): void {
    if (!this.#bot) {
      this.#upstream.terminate();
      return;
    }
    // A close already under way on either side is recorded as it ends, with its own code.
    const closing = this.#bot.readyState !== WebSocket.OPEN || this.#upstream.readyState !== WebSocket.OPEN;
    if (closing) return;
    if (!this.#ended) {
      this.#ended = true;
      this.#record?.close('server', CLOSE_GOING_AWAY, SHUTDOWN_REASON);
    }
    passClose(this.#bot, CLOSE_GOING_AWAY, SHUTDOWN_REASON);
    passClose(this.#upstream, CLOSE_GOING_AWAY, SHUTDOWN_REASON);
  }

  /** Ends both sockets now (a peer that did not answer the close in time). */
  terminate(): void {
    this.#bot?.terminate();
    this.#upstream.terminate();
  }

  /** One side is closed; with both, the connection is over. */
  #finish(): void {
    this.#done += 1;
    if (this.#done === 2) this.#release();
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#context.closed(this);
  }
}
