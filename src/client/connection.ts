// One connection's life (connect, heartbeat, reconnect with backoff, replay of subscriptions,
// requests by requestId): a single state machine whose timers and states change together.
// What it promises its owner is connection-contract.ts; how a turn's frames are written, turn-cork.ts.
import WebSocket from 'ws';
import { CLOSE_NORMAL, CLOSE_POLICY_VIOLATION, CLOSE_REASONS, CLOSE_UNAUTHORIZED } from '../protocol/close-codes.js';
import { MAX_SERVICE_MESSAGE_BYTES } from '../protocol/limits.js';
import { parseServerMessage } from '../protocol/events.js';
import { redactUrl } from '../protocol/redact.js';
import { backoffDelay, DEFAULT_BACKOFF } from './backoff.js';
import type { Endpoint } from './endpoint.js';
import {
  ClientError,
  DEFAULT_TIMEOUT_MS,
  describeNetworkError,
  formatWait,
  keyRefusedError,
  timeoutError,
} from './errors.js';
import { API_KEY_HEADER, API_KEY_QUERY } from '../protocol/paths.js';
import { ReplyWaits } from './reply-waits.js';
import { timerDelay } from './timer-delay.js';
import { TurnCork } from './turn-cork.js';
import {
  DIALECT_QUERY,
  type ConnectionHandlers,
  type ConnectionOptions,
  type HeartbeatOptions,
  type ReadyInfo,
} from './connection-contract.js';

export { DIALECT_QUERY } from './connection-contract.js';
export type {
  ConnectedFacts,
  ConnectionHandlers,
  ConnectionLike,
  ConnectionOptions,
  ConnectionState,
  FrameDirection,
  HeartbeatOptions,
  OpenConnection,
  ReadyInfo,
} from './connection-contract.js';

const DEFAULT_HEARTBEAT: HeartbeatOptions = { intervalMs: 15_000, timeoutMs: 10_000 };

const TOO_LARGE = `a message from the service was too large (over ${MAX_SERVICE_MESSAGE_BYTES / 1024 / 1024} MiB)`;
// ws's words for its own handshake timer: the upgrade was not answered in time.
const HANDSHAKE_TIMED_OUT = 'Opening handshake has timed out';

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
  readonly #cork = new TurnCork();
  #ready = false;
  #closing = false;
  #finished = false;
  #failedAttempts = 0;
  readonly #endpoints: readonly Endpoint[];
  /** The address being tried or in use. */
  #current = 0;
  /** Why each address failed before the first connection, in order. */
  readonly #firstFailures: ClientError[] = [];
  #timers = new Set<NodeJS.Timeout>();
  #heartbeat: NodeJS.Timeout | undefined;
  #pongDeadline: NodeJS.Timeout | undefined;
  #lostReason: string | undefined;
  #paused = false;
  /** Whether the service has answered any awaited reply: a wait that runs out before that ends the connection. */
  #answered = false;
  /** Whether the current socket has carried any message from the service. */
  #heard = false;
  /**
   * Whether the service ever took a connection (said anything on one, or opened the tree
   * feed, which never speaks first): until then a failure is a failure to connect.
   */
  #established = false;
  readonly #replyWaits: ReplyWaits<WebSocket | undefined>;
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
      timeoutMs: DEFAULT_TIMEOUT_MS,
      retryReplyTimeouts: false,
      stableMs: 10_000,
      random: Math.random,
      ...options,
    };
    this.#endpoints = Array.isArray(options.endpoint)
      ? [...(options.endpoint as readonly Endpoint[])]
      : [options.endpoint as Endpoint];
    if (this.#endpoints.length === 0) throw new RangeError('endpoint must name at least one address');
    if (!(this.#options.timeoutMs > 0) || !Number.isFinite(this.#options.timeoutMs)) {
      throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${this.#options.timeoutMs}`);
    }
    this.#replyWaits = new ReplyWaits(
      this.#options.timeoutMs,
      (wait) => {
        // Nothing is read while paused, so the reply cannot have arrived yet.
        if (this.#paused) return true;
        if (wait.context === this.#ws) this.#replyTimedOut(wait.context, wait.what);
        return false;
      },
      () => performance.now(),
    );
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
    this.#cork.send(ws, frame);
    this.handlers.onFrame?.('sent', frame);
    return true;
  }

  /**
   * Starts the clock on a reply the owner has just sent a command for (what
   * `send` returned true for). Returns the function to call when the reply
   * arrives. When it does not arrive within `timeoutMs`, the connection ends
   * with a `timeout` ClientError, or, once the service has answered before and
   * reconnecting is on, is dropped and reopened like any lost connection. A
   * drop clears every pending wait: the owner resends, and waits again, on the
   * next ready.
   */
  expectReply(what: string): () => void {
    const settle = this.#replyWaits.add(what, this.#ws);
    return () => {
      if (settle()) this.#answered = true;
    };
  }

  /**
   * Stops reading from the service (the owner's output is not keeping up);
   * what the service sends waits in its buffers, where its slow-consumer rule
   * applies, instead of in this process.
   */
  pause(): void {
    this.#paused = true;
    this.#clearPongDeadline();
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.pause();
  }

  get paused(): boolean {
    return this.#paused;
  }

  get isOpen(): boolean {
    return this.#ready;
  }

  resume(): void {
    this.#paused = false;
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.resume();
  }

  #replyTimedOut(ws: WebSocket | undefined, what: string): void {
    const never = this.#heard ? '' : ' (it has sent nothing on this connection)';
    const error = timeoutError(
      this.#options.timeoutMs,
      `${what} from ${this.#endpoints[this.#current]!.wsUrl}${never}`,
    );
    if (!ws || !(this.#answered || this.#options.retryReplyTimeouts) || !this.#options.reconnect)
      return this.#finish(error);
    this.drop(error.message);
  }

  drop(reason: string): void {
    const ws = this.#ws;
    if (this.#finished || this.#closing) return;
    if (!ws || !this.#options.reconnect) return this.#finish(new ClientError('unreachable', reason));
    this.#lostReason = reason;
    ws.terminate();
  }

  /** Ends the connection for a reason the owner found (a refused subscription, say). */
  fail(error: ClientError): void {
    this.#closing = true;
    const ws = this.#ws;
    if (ws && ws.readyState === WebSocket.OPEN) ws.close(CLOSE_NORMAL);
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
        else ws.close(CLOSE_NORMAL);
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
    this.#clearReplyTimers();
    clearInterval(this.#heartbeat);
    this.#clearPongDeadline();
    this.#heartbeat = undefined;
    this.#pongDeadline = undefined;
  }

  #clearReplyTimers(): void {
    this.#replyWaits.clear();
  }

  #later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      run();
    }, timerDelay(ms));
    this.#timers.add(timer);
  }

  #open(attempt: number): void {
    const { apiKey, authQuery } = this.#options;
    const endpoint = this.#endpoints[this.#current]!;
    this.handlers.onState?.({ kind: 'connecting', url: endpoint.wsUrl, attempt });
    const separator = endpoint.wsUrl.includes('?') ? '&' : '?';
    const dialect = `${endpoint.wsUrl}${separator}${DIALECT_QUERY}`;
    const url =
      apiKey !== undefined && authQuery ? `${dialect}&${API_KEY_QUERY}=${encodeURIComponent(apiKey)}` : dialect;
    const headers = apiKey !== undefined && !authQuery ? { [API_KEY_HEADER]: apiKey } : undefined;
    const ws = new WebSocket(url, {
      headers,
      handshakeTimeout: this.#options.timeoutMs,
      maxPayload: MAX_SERVICE_MESSAGE_BYTES,
    });
    this.#ws = ws;
    this.#heard = false;
    let upgradeFailure: ClientError | undefined;
    let socketError: string | undefined;
    let handshakeTimedOut = false;

    ws.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      const words = `the upgrade to ${endpoint.wsUrl} was answered with HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}`;
      upgradeFailure =
        status === 401 || status === 403
          ? new ClientError('unauthorized', `${words}: the key was refused`, 'unauthorized')
          : new ClientError(
              'unreachable',
              status === 404 ? `${words}: no Stream Posts endpoint there (check the URL)` : words,
            );
      response.resume();
      ws.terminate();
    });
    ws.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.#lostReason = TOO_LARGE;
      if (error.message === HANDSHAKE_TIMED_OUT) {
        handshakeTimedOut = true;
        socketError = timeoutError(
          this.#options.timeoutMs,
          `the reply to the WebSocket upgrade from ${endpoint.wsUrl}`,
        ).message;
      } else socketError = redactUrl(describeNetworkError(error));
    });
    ws.on('open', () => {
      if (this.#paused) ws.pause();
      this.#startHeartbeat(ws);
      const reconnected = this.#established;
      // The tree feed never speaks first: being open is being subscribed.
      if (endpoint.treeFeed) this.#established = true;
      // Commands go as soon as the socket is open (PROTOCOL.md B1a): `connected` may come late, or never.
      this.#becomeReady(reconnected);
    });
    ws.on('pong', () => this.#clearPongDeadline());
    ws.on('message', (data, isBinary) => {
      // Frames still arriving after the end (a second refusal, say) must not make it ready again.
      if (isBinary || this.#ws !== ws || this.#finished) return;
      const raw = data.toString();
      this.handlers.onFrame?.('received', raw);
      const message = parseServerMessage(raw);
      if (message.kind === 'error' && message.code === 'unauthorized') {
        this.#finish(keyRefusedError({ by: 'reply', detail: message.message || 'unauthorized' }));
        return;
      }
      // The service turning the first connection away (too many for the key, say) before it
      // said anything else: no usable connection, whatever commands were already sent.
      if (
        !this.#heard &&
        !this.#established &&
        message.kind === 'error' &&
        message.code === 'limit-exceeded' &&
        message.requestId === undefined
      ) {
        this.#finish(
          new ClientError(
            'refused',
            `the service refused the connection: ${message.message || message.code}`,
            message.code,
          ),
        );
        return;
      }
      this.#heard = true;
      this.#established = true;
      this.handlers.onMessage?.(message, raw);
    });
    ws.on('close', (code, reasonBuffer) => {
      if (this.#ws !== ws) return;
      const wasReady = this.#ready;
      this.#ready = false;
      clearInterval(this.#heartbeat);
      this.#clearPongDeadline();
      this.#clearReplyTimers();
      if (this.#closing || this.#finished) return this.#finish();
      const reason = reasonBuffer.toString();
      // This end ended it (a ping unanswered, a reply not in time, a message too large):
      // that says why; the close code ws reports then is only its own 1006.
      const ownReason = this.#lostReason;
      this.#lostReason = undefined;
      if (code === CLOSE_UNAUTHORIZED) {
        return this.#finish(keyRefusedError({ by: 'close', detail: describeClose(code, reason) }));
      }
      if (upgradeFailure?.kind === 'unauthorized') return this.#finish(upgradeFailure);
      // On the tree feed a refused subscription is a close, and trying again would be refused again.
      if (endpoint.treeFeed && code === CLOSE_POLICY_VIOLATION) {
        return this.#finish(
          new ClientError('refused', `the service refused the subscription (${describeClose(code, reason)})`),
        );
      }
      const why =
        ownReason ??
        upgradeFailure?.message ??
        (wasReady || code !== 1006 ? describeClose(code, reason) : (socketError ?? describeClose(code, reason)));
      if (!this.#established) {
        this.#firstFailures.push(
          upgradeFailure ??
            (handshakeTimedOut
              ? new ClientError('timeout', why, undefined, {
                  awaited: `the reply to the WebSocket upgrade from ${endpoint.wsUrl}`,
                })
              : new ClientError('unreachable', `cannot connect to ${endpoint.wsUrl}: ${why}`)),
        );
        // The first connection tries each address once, at once; none answering ends it.
        if (this.#current + 1 < this.#endpoints.length) {
          this.#current += 1;
          this.handlers.onState?.({
            kind: 'reconnecting',
            delayMs: 0,
            reason: why,
            attempt: this.#firstFailures.length,
          });
          this.#later(0, () => this.#open(this.#firstFailures.length));
          return;
        }
        return this.#finish(this.#noneAnswered());
      }
      if (!this.#options.reconnect) {
        return this.#finish(new ClientError('unreachable', `the connection to ${endpoint.wsUrl} ended: ${why}`));
      }
      // A connection that ended before `stableMs` counts as a failure like one that never opened.
      const step = this.#failedAttempts;
      this.#failedAttempts += 1;
      if (this.#failedAttempts > this.#options.maxAttempts) {
        return this.#finish(
          new ClientError('unreachable', `gave up reconnecting to ${this.#urls()} after ${step} attempts: ${why}`),
        );
      }
      // The next address at once; only a whole round of failures waits, with the backoff
      // one address alone would have (a lone address waits before each attempt).
      const round = this.#endpoints.length;
      this.#current = (this.#current + 1) % round;
      const delayMs =
        this.#failedAttempts % round === 0
          ? backoffDelay(this.#failedAttempts / round - 1, this.#options.backoff, this.#options.random)
          : 0;
      this.handlers.onState?.({ kind: 'reconnecting', delayMs, reason: why, attempt: this.#failedAttempts });
      this.#later(delayMs, () => this.#open(this.#failedAttempts));
    });
  }

  #urls(): string {
    return this.#endpoints.map((endpoint) => endpoint.wsUrl).join(', ');
  }

  /** The first connection's failure: one address's own, or each address's in turn. */
  #noneAnswered(): ClientError {
    const failures = this.#firstFailures;
    if (failures.length === 1) return failures[0]!;
    const kind = failures.every((failure) => failure.kind === 'timeout') ? 'timeout' : 'unreachable';
    return new ClientError(
      kind,
      `cannot connect to any of ${this.#urls()}: ${failures.map((failure) => failure.message).join('; ')}`,
      undefined,
      kind === 'timeout' ? { awaited: `the reply to the WebSocket upgrade from any of ${this.#urls()}` } : {},
    );
  }

  #becomeReady(reconnected: boolean): void {
    const info: ReadyInfo = { reconnected };
    this.#ready = true;
    const ws = this.#ws;
    this.#later(this.#options.stableMs, () => {
      if (this.#ws === ws && this.#ready) this.#failedAttempts = 0;
    });
    this.handlers.onState?.({ kind: 'ready', info });
    this.handlers.onReady?.(info);
  }

  #clearPongDeadline(): void {
    clearTimeout(this.#pongDeadline);
    this.#pongDeadline = undefined;
  }

  #startHeartbeat(ws: WebSocket): void {
    const { intervalMs, timeoutMs } = this.#options.heartbeat;
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => {
      // A paused reader cannot see the pong; the service's own keep-alive judges it instead.
      if (ws.readyState !== WebSocket.OPEN || this.#paused) return;
      // A ping still unanswered keeps its deadline: with an interval shorter than the
      // timeout, a new ping must not push the deadline back for ever.
      if (this.#pongDeadline !== undefined) return;
      // A peer that cannot answer within the timeout is gone; the close handler reconnects.
      this.#pongDeadline = setTimeout(() => {
        this.#lostReason = `no answer to a ping within ${formatWait(timeoutMs)}`;
        ws.terminate();
      }, timeoutMs);
      ws.ping();
    }, intervalMs);
  }
}
