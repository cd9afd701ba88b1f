import WebSocket from 'ws';
import { parseServerMessage, type ServerMessage } from '../protocol/events.js';
import { redactUrl } from '../protocol/redact.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import type { Endpoint } from './endpoint.js';
import { ClientError, describeNetworkError } from './errors.js';

const CLOSE_UNAUTHORIZED = 4401;

export interface HeartbeatOptions {
  intervalMs: number;
  timeoutMs: number;
}

const DEFAULT_HEARTBEAT: HeartbeatOptions = { intervalMs: 15_000, timeoutMs: 10_000 };

export interface ConnectionOptions {
  endpoint: Endpoint;
  apiKey: string | undefined;
  /** Send the key as `?apiKey=` instead of the `x-api-key` header. */
  authQuery?: boolean;
  /** Reconnect after a drop (never after `unauthorized`). */
  reconnect?: boolean;
  /** Consecutive failed attempts after a drop before giving up; unlimited by default. */
  maxAttempts?: number;
  backoff?: BackoffOptions;
  heartbeat?: HeartbeatOptions;
  /** How long to wait for the `connected` event before carrying on without it. */
  readyTimeoutMs?: number;
  random?: () => number;
}

export interface ReadyInfo {
  userId: string;
  streams: string[];
  /** False on the first connection, true after a reconnect. */
  reconnected: boolean;
}

export type ConnectionState =
  | { kind: 'connecting'; url: string; attempt: number }
  | { kind: 'ready'; info: ReadyInfo }
  | { kind: 'reconnecting'; delayMs: number; reason: string };

export interface ConnectionHandlers {
  /** Every (re)connection, once the service said `connected`: (re)send subscriptions here. */
  onReady?(info: ReadyInfo): void;
  onMessage?(message: ServerMessage, raw: string): void;
  onState?(state: ConnectionState): void;
}

/** Close codes people meet, in words. */
const CLOSE_REASONS: Record<number, string> = {
  1000: 'normal closure',
  1001: 'the service is going away',
  1006: 'connection lost',
  1009: 'frame too large',
  1011: 'server error',
  1013: 'too slow: the service dropped this reader',
  4401: 'unauthorized',
};

function describeClose(code: number, reason: string): string {
  const words = reason || CLOSE_REASONS[code];
  return words ? `close ${code}, ${words}` : `close ${code}`;
}

/**
 * One logical connection to the service that survives drops: it reconnects
 * with backoff, checks liveness with pings, and tells its owner when it is
 * ready so the owner can (re)subscribe or resend. `done` settles once: it
 * resolves after `close()`, and rejects with a ClientError when the
 * connection cannot go on (refused, unauthorized, or a drop with reconnect off).
 */
export class Connection {
  readonly done: Promise<void>;
  #resolveDone!: () => void;
  #rejectDone!: (error: ClientError) => void;
  #ws: WebSocket | undefined;
  #ready = false;
  #everReady = false;
  #closing = false;
  #finished = false;
  #failedAttempts = 0;
  #timers = new Set<NodeJS.Timeout>();
  #heartbeat: NodeJS.Timeout | undefined;
  #pongDeadline: NodeJS.Timeout | undefined;
  #lostReason: string | undefined;
  readonly #options: Required<Omit<ConnectionOptions, 'apiKey'>> & { apiKey: string | undefined };

  constructor(
    options: ConnectionOptions,
    private readonly handlers: ConnectionHandlers = {},
  ) {
    this.#options = {
      authQuery: false,
      reconnect: true,
      maxAttempts: Number.POSITIVE_INFINITY,
      backoff: DEFAULT_BACKOFF,
      heartbeat: DEFAULT_HEARTBEAT,
      readyTimeoutMs: 5_000,
      random: Math.random,
      ...options,
    };
    this.done = new Promise((resolve, reject) => {
      this.#resolveDone = resolve;
      this.#rejectDone = reject;
    });
    // Owners await `done`; an unobserved rejection must not crash the process first.
    this.done.catch(() => {});
  }

  start(): this {
    this.#open(0);
    return this;
  }

  /** Sends a command frame; false when not connected (the owner resends on the next ready). */
  send(frame: object): boolean {
    return this.sendText(JSON.stringify(frame));
  }

  sendText(frame: string): boolean {
    const ws = this.#ws;
    if (!this.#ready || !ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(frame);
    return true;
  }

  /** Ends the connection for a reason the owner found (a refused subscription, say). */
  fail(error: ClientError): void {
    this.#closing = true;
    const ws = this.#ws;
    if (ws && ws.readyState === WebSocket.OPEN) ws.close(1000);
    this.#finish(error);
  }

  /** Ends the connection normally (1000) and stops reconnecting. */
  async close(): Promise<void> {
    if (this.#finished) return this.done.catch(() => {});
    this.#closing = true;
    this.#clearTimers();
    const ws = this.#ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => ws.terminate(), 1_000);
        ws.once('close', () => {
          clearTimeout(force);
          resolve();
        });
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(1000);
      });
    }
    this.#finish();
    return this.done.catch(() => {});
  }

  #finish(error?: ClientError): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#ready = false;
    this.#clearTimers();
    if (error) {
      if (!this.#closing) this.#ws?.terminate();
      this.#rejectDone(error);
    } else this.#resolveDone();
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    clearInterval(this.#heartbeat);
    clearTimeout(this.#pongDeadline);
    this.#heartbeat = undefined;
    this.#pongDeadline = undefined;
  }

  #later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      run();
    }, ms);
    this.#timers.add(timer);
  }

  #open(attempt: number): void {
    const { endpoint, apiKey, authQuery } = this.#options;
    this.handlers.onState?.({ kind: 'connecting', url: endpoint.wsUrl, attempt });
    const url = apiKey !== undefined && authQuery ? `${endpoint.wsUrl}?apiKey=${encodeURIComponent(apiKey)}` : endpoint.wsUrl;
    const headers = apiKey !== undefined && !authQuery ? { 'x-api-key': apiKey } : undefined;
    const ws = new WebSocket(url, { headers, handshakeTimeout: 10_000, maxPayload: 16 * 1024 * 1024 });
    this.#ws = ws;
    let upgradeFailure: ClientError | undefined;
    let socketError: string | undefined;

    ws.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      const words = `the upgrade to ${endpoint.wsUrl} was answered with HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}`;
      upgradeFailure =
        status === 401 || status === 403
          ? new ClientError('unauthorized', `${words}: the key was refused`, 'unauthorized')
          : new ClientError('unreachable', status === 404 ? `${words}: no Stream Posts endpoint there (check --url)` : words);
      response.resume();
      ws.terminate();
    });
    ws.on('error', (error) => {
      socketError = redactUrl(describeNetworkError(error));
    });
    ws.on('open', () => {
      this.#startHeartbeat(ws);
      this.#later(this.#options.readyTimeoutMs, () => {
        if (this.#ws === ws && !this.#ready) this.#becomeReady({ userId: '', streams: [] });
      });
    });
    ws.on('pong', () => clearTimeout(this.#pongDeadline));
    ws.on('message', (data, isBinary) => {
      if (isBinary || this.#ws !== ws) return;
      const raw = data.toString();
      const message = parseServerMessage(raw);
      if (message.kind === 'error' && message.code === 'unauthorized') {
        this.#finish(new ClientError('unauthorized', `the service refused the key: ${message.message || 'unauthorized'}`, 'unauthorized'));
        return;
      }
      if (!this.#ready) {
        if (message.kind === 'connected') {
          this.#becomeReady({ userId: message.userId, streams: message.streams });
          return;
        }
        // A service that skips `connected` is still usable.
        this.#becomeReady({ userId: '', streams: [] });
      }
      this.handlers.onMessage?.(message, raw);
    });
    ws.on('close', (code, reasonBuffer) => {
      if (this.#ws !== ws) return;
      const wasReady = this.#ready;
      this.#ready = false;
      clearInterval(this.#heartbeat);
      clearTimeout(this.#pongDeadline);
      if (this.#closing || this.#finished) return this.#finish();
      const reason = reasonBuffer.toString() || this.#lostReason || '';
      this.#lostReason = undefined;
      if (code === CLOSE_UNAUTHORIZED) {
        return this.#finish(new ClientError('unauthorized', `the service refused the key (${describeClose(code, reason)})`, 'unauthorized'));
      }
      if (upgradeFailure && (upgradeFailure.kind === 'unauthorized' || !this.#everReady)) return this.#finish(upgradeFailure);
      const why = upgradeFailure?.message ?? (wasReady || code !== 1006 ? describeClose(code, reason) : (socketError ?? describeClose(code, reason)));
      if (!this.#everReady) {
        return this.#finish(new ClientError('unreachable', `cannot connect to ${endpoint.wsUrl}: ${why}`));
      }
      if (!this.#options.reconnect) {
        return this.#finish(new ClientError('unreachable', `the connection to ${endpoint.wsUrl} ended: ${why}`));
      }
      if (!wasReady) this.#failedAttempts += 1;
      if (this.#failedAttempts >= this.#options.maxAttempts) {
        return this.#finish(new ClientError('unreachable', `gave up reconnecting to ${endpoint.wsUrl} after ${this.#failedAttempts} attempts: ${why}`));
      }
      const delayMs = backoffDelay(this.#failedAttempts, this.#options.backoff, this.#options.random);
      this.handlers.onState?.({ kind: 'reconnecting', delayMs, reason: why });
      this.#later(delayMs, () => this.#open(this.#failedAttempts));
    });
  }

  #becomeReady(base: { userId: string; streams: string[] }): void {
    const info: ReadyInfo = { ...base, reconnected: this.#everReady };
    this.#ready = true;
    this.#everReady = true;
    this.#failedAttempts = 0;
    this.handlers.onState?.({ kind: 'ready', info });
    this.handlers.onReady?.(info);
  }

  #startHeartbeat(ws: WebSocket): void {
    const { intervalMs, timeoutMs } = this.#options.heartbeat;
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return;
      clearTimeout(this.#pongDeadline);
      // A peer that cannot answer within the timeout is gone; the close handler reconnects.
      this.#pongDeadline = setTimeout(() => {
        this.#lostReason = `no answer to a ping within ${timeoutMs / 1000}s`;
        ws.terminate();
      }, timeoutMs);
      ws.ping();
    }, intervalMs);
  }
}
