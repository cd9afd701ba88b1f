// replay/: a recording served back with no upstream (`serve --replay`). A WebSocket upgrade or
// a REST request the recording answers is answered from it here; the rest goes on to the
// simulated service with `fallback`, or is refused naming the closest recorded exchange. Joined
// to the HTTP front, the faults and the admin endpoints in ../assemble.ts.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type Server as WebSocketServerOf } from 'ws';
import { CLOSE_GOING_AWAY, CLOSE_NO_RECORDED_REPLY } from '../../protocol/close-codes.js';
import { MAX_FRAME_BYTES } from '../../protocol/limits.js';
import { TREE_FEED_PATH, WS_PATH } from '../../protocol/paths.js';
import type { RecordedConnection, RecordedTransport, Recording } from '../../protocol/recording.js';
import { redactUrl } from '../../protocol/redact.js';
import { TREE_COMMAND } from '../../protocol/types.js';
import type { Clock } from '../clock.js';
import { keyFromRequest, type RequestTarget } from '../http-util.js';
import { CLOSE_DEADLINE_MS } from '../http/server.js';
import type { Logger } from '../logger.js';
import { closeReason, ConnectionSocket } from '../ws/connection.js';
import type { FanOut } from '../ws/fanout.js';
import { bindPlaceholders, closest, fitsRecorded, IgnoredFields, queryDifferences } from './match.js';
import { ReplayConnection, type ReplayContext } from './replay-connection.js';
import { HOP_HEADERS, RestReplay } from './replay-rest.js';
import { bodyBytes, originsOf, type Rewrite } from './rewrite.js';
import { scriptOf, type Script } from './script.js';
import { Waits } from './waits.js';

/** How a recording is served (startServer's `replay…` options, checked). */
export interface ReplaySettings {
  recording: Recording;
  /** `recorded` is 1; `max` is Infinity (the order kept, no waits). */
  speed: number;
  /** Shift recorded date-times so that the recording's start is the replay's (false: as recorded). */
  shiftTimes: boolean;
  /** Field names (anywhere) or dotted paths (from the top) never compared. */
  ignore: readonly string[];
  /** What the recording does not answer goes to the simulated service (else 4400, or 404). */
  fallback: boolean;
}

/** What a replay is joined to (../assemble.ts). */
export interface ReplayParts {
  clock: Clock;
  logger: Logger;
  fanout: FanOut;
  maxBufferedBytes: number;
  bodyTimeoutMs: number;
  connectionIdPrefix: string;
  /** Injected faults (admin/faults.ts): a `refuse-connections` fault refuses a replayed upgrade too. */
  faults: {
    refusal(key: string | undefined): number | undefined | Promise<number | undefined>;
    refusalBody(status: number): string;
  };
  /** Gives a WebSocket the recording no longer answers to the simulated service, as if it had just opened there. */
  handOver(ws: ConnectionSocket, socket: Duplex, key: string | undefined, url: RequestTarget): Promise<void>;
}

/** What was used of a recording: what `serve --replay` prints at the end, and `--replay-strict` judges. */
export interface ReplayReport {
  /** Recorded connections no live one was matched to. */
  unusedConnections: { id: number; transport: RecordedTransport; path: string }[];
  /** Recorded REST requests no live one was matched to. */
  unusedRequests: { id: number; method: string; path: string }[];
  /** Recorded client frames of connections that were used, which no live frame matched. */
  unreachedFrames: { connection: number; frames: number }[];
  /** Live connections, frames and requests the recording had no answer for. */
  unmatched: number;
}

/** The transport a live address speaks, as a recording names it (undefined: not a WebSocket address). */
function transportOf(url: RequestTarget): RecordedTransport | undefined {
  const path = url.pathname.replace(/\/+$/, '');
  const tree = url.searchParams.get('format') === 'tree';
  if (path === TREE_FEED_PATH) return tree ? 'tree' : 'graphql';
  if (path === WS_PATH) return tree ? 'tree' : 'ws';
  if (!path.startsWith(`${WS_PATH}/`)) return undefined;
  return path === `${WS_PATH}/${TREE_COMMAND}` ? 'tree' : 'url-form';
}

/** An upgrade answered with plain HTTP (headers checked when the recording was read), then the socket closed. */
function writeRefusal(socket: Duplex, status: number, headers: Record<string, string>, body: Buffer): void {
  const lines = Object.entries(headers)
    .filter(([name]) => !HOP_HEADERS.has(name.toLowerCase()))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Refused'}\r\n${lines}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  socket.end(body);
}

/**
 * Calls `then` once the simulated service acknowledges a graphql-ws session given to it
 * mid-way (its key may take a store's answer), and keeps that second `connection_ack` back:
 * the bot has had the recorded one. A refusal reaches the bot as it is, and `then` never runs.
 */
function afterAcknowledged(ws: ConnectionSocket, then: () => void): void {
  const send = ws.send;
  ws.send = function sendUnlessAck(this: ConnectionSocket, data: unknown, ...rest: unknown[]) {
    if (typeof data !== 'string' || !data.includes('"connection_ack"'))
      return (send as (...args: unknown[]) => void).call(this, data, ...rest);
    ws.send = send;
    (rest.find((arg) => typeof arg === 'function') as (() => void) | undefined)?.();
    then();
  } as typeof ws.send;
}

const queryText = (query: readonly [string, string][]) =>
  query.length === 0 ? '' : `?${new URLSearchParams(query as [string, string][]).toString()}`;

export class Replay {
  readonly connections = new Set<ReplayConnection>();
  readonly #settings: ReplaySettings;
  readonly #parts: ReplayParts;
  readonly #waits: Waits;
  readonly #wss: WebSocketServerOf<typeof ConnectionSocket>;
  readonly #rest: RestReplay;
  readonly #usedConnections = new Set<RecordedConnection>();
  /** The recorded subprotocol an upgrade under way is to be answered with. */
  readonly #subprotocols = new WeakMap<IncomingMessage, string>();
  readonly #context: ReplayContext;
  #scripts: Map<RecordedConnection, Script> | undefined;
  #rewrite: Rewrite = { shiftMs: 0, origins: [] };
  #unmatched = 0;
  #reached = new Map<RecordedConnection, number>();
  #nextId = 1;
  #toldFallback = false;

  constructor(settings: ReplaySettings, parts: ReplayParts) {
    this.#settings = settings;
    this.#parts = parts;
    this.#waits = new Waits(parts.clock);
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      clientTracking: false,
      WebSocket: ConnectionSocket,
      handleProtocols: (_offered, req) => this.#subprotocols.get(req) ?? false,
    });
    const ignored = new IgnoredFields(settings.ignore);
    this.#context = {
      clock: parts.clock,
      waits: this.#waits,
      logger: parts.logger,
      speed: settings.speed,
      ignored,
      maxBufferedBytes: parts.maxBufferedBytes,
      fanout: parts.fanout,
      unmatched: (connection, frame, isBinary) => this.#frameUnmatched(connection, frame, isBinary),
      closed: (connection) => this.#closed(connection),
    };
    this.#rest = new RestReplay({
      exchanges: settings.recording.requests,
      ignored,
      logger: parts.logger,
      speed: settings.speed,
      waits: this.#waits,
      now: () => parts.clock.now(),
      bodyTimeoutMs: parts.bodyTimeoutMs,
      rewrite: () => this.#rewrite,
      unmatched: (what) => this.#fallback(what),
    });
  }

  /** From now on the recording plays: its start is now (on the service's clock), its upstream this server's address. */
  start(at: { url: string; httpUrl: string }): void {
    const { recording, shiftTimes } = this.#settings;
    this.#rewrite = {
      shiftMs: shiftTimes ? this.#parts.clock.now() - Date.parse(recording.meta.recordedAt) : 0,
      origins: originsOf(recording.meta.upstream, at),
    };
    this.#scripts = new Map(
      recording.connections.map((connection) => [connection, scriptOf(connection, this.#rewrite)]),
    );
    const { logger } = this.#parts;
    logger.log('info', 'replay: serving a recording', {
      connections: recording.connections.length,
      requests: recording.requests.length,
      recordedAt: recording.meta.recordedAt,
      dialect: recording.meta.dialect,
      speed: this.#settings.speed === Infinity ? 'max' : this.#settings.speed,
    });
    if (recording.meta.truncated)
      logger.log('warn', 'replay: the recording was cut short while recording; what came after was not recorded');
  }

  /** Answers an upgrade from the recording; false leaves it to the simulated service. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: RequestTarget): boolean {
    const transport = transportOf(url);
    if (transport === undefined || this.#scripts === undefined) return false;
    const query = [...url.searchParams];
    const key = keyFromRequest(req, url);
    const differ = (recorded: RecordedConnection) => [
      ...(recorded.transport === transport ? [] : ['transport']),
      ...(fitsRecorded(recorded.request.path, url.pathname) ? [] : ['path']),
      ...queryDifferences(recorded.request.query, query),
    ];
    const matching = this.#settings.recording.connections.filter((recorded) => differ(recorded).length === 0);
    // Opened more often than recorded: the last connection of its kind plays again.
    const recorded = matching.find((candidate) => !this.#usedConnections.has(candidate)) ?? matching.at(-1);
    const asked = redactUrl(`${url.pathname}${queryText(query)}`);
    if (recorded === undefined) {
      if (this.#fallback(`the connection ${asked}`)) return false;
      const near = closest(this.#settings.recording.connections, differ);
      this.#parts.logger.log('warn', 'replay: no recorded connection', {
        path: asked,
        closest: near
          ? `${near.best.id} (${near.best.transport} ${redactUrl(near.best.request.path + queryText(near.best.request.query))})`
          : '(none recorded)',
        differs: near?.differ.join(', '),
      });
      this.#unmatched += 1;
      // The client's own subprotocol, so that it opens and reads the close instead of failing the handshake.
      const offered = req.headers['sec-websocket-protocol']?.split(',')[0]?.trim();
      if (offered) this.#subprotocols.set(req, offered);
      socket.on('error', () => socket.destroy());
      this.#wss.handleUpgrade(req, socket, head, (ws) =>
        ws.close(CLOSE_NO_RECORDED_REPLY, closeReason(`no recorded connection for ${asked}`)),
      );
      return true;
    }
    // An injected `refuse-connections` fault refuses a replayed upgrade as it would any other.
    const injected = this.#parts.faults.refusal(key);
    if (injected === undefined) this.#open(recorded, req, socket, head, url);
    else
      void Promise.resolve(injected).then(
        (status) => {
          if (status === undefined) return this.#open(recorded, req, socket, head, url);
          const body = Buffer.from(this.#parts.faults.refusalBody(status));
          writeRefusal(socket, status, { 'content-type': 'application/json; charset=utf-8' }, body);
        },
        () => this.#open(recorded, req, socket, head, url),
      );
    return true;
  }

  #open(recorded: RecordedConnection, req: IncomingMessage, socket: Duplex, head: Buffer, url: RequestTarget): void {
    this.#usedConnections.add(recorded);
    if (recorded.refused) {
      const { status, headers, body } = recorded.refused;
      writeRefusal(socket, status, headers, bodyBytes(body, this.#rewrite));
      return;
    }
    const bound = new Map<string, string>();
    bindPlaceholders(recorded.request.path, url.pathname, bound);
    const query = [...url.searchParams];
    for (const [name, value] of recorded.request.query) {
      const given = query.find(([liveName]) => liveName === name);
      if (given) bindPlaceholders(value, given[1], bound);
    }
    const recordedKey = recorded.request.headers['x-api-key'] ?? recorded.request.headers['authorization'];
    const liveKey = req.headers['x-api-key'] ?? req.headers['authorization'];
    if (recordedKey !== undefined && typeof liveKey === 'string') bindPlaceholders(recordedKey, liveKey, bound);
    if (recorded.subprotocol !== undefined) this.#subprotocols.set(req, recorded.subprotocol);
    const key = keyFromRequest(req, url);
    socket.on('error', () => socket.destroy());
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const id = `${this.#parts.connectionIdPrefix}r${this.#nextId++}`;
      const script = this.#scripts!.get(recorded)!;
      const connection = new ReplayConnection(ws, socket, this.#context, id, script, bound, key);
      this.connections.add(connection);
      this.#origins.set(connection, { key, url });
      this.onOpen?.(connection);
    });
  }

  /** Called as a replayed connection opens (faults attach to it, the dashboard hears of it). */
  onOpen: ((connection: ReplayConnection) => void) | undefined;

  readonly #origins = new WeakMap<ReplayConnection, { key: string | undefined; url: RequestTarget }>();

  /** Answers a request from the recording, or gives it back (its body readable again) for the simulated service. */
  request(req: IncomingMessage, res: ServerResponse, url: URL): Promise<IncomingMessage | undefined> {
    // The admin endpoints are the simulated service's; a WebSocket address without an upgrade
    // gets its 426 there, unless the recording holds requests to it (the hosted `/graphql` takes HTTP too).
    const webSocketOnly =
      transportOf(url) !== undefined &&
      !this.#settings.recording.requests.some((exchange) => fitsRecorded(exchange.request.path, url.pathname));
    if (url.pathname.startsWith('/_admin') || webSocketOnly) return Promise.resolve(req);
    return this.#rest.handle(req, res, url);
  }

  /** Whether what the recording does not answer goes to the simulated service; said once in the log. */
  #fallback(what: string): boolean {
    if (!this.#settings.fallback) return false;
    if (!this.#toldFallback) {
      this.#toldFallback = true;
      this.#parts.logger.log('warn', 'replay: what the recording does not answer goes to the simulated service', {
        first: what,
      });
    }
    return true;
  }

  #frameUnmatched(connection: ReplayConnection, frame: Buffer, isBinary: boolean): boolean {
    this.#unmatched += 1;
    if (!this.#fallback(`a frame on ${connection.id}`)) return false;
    const origin = this.#origins.get(connection)!;
    connection.handOver((ws, socket, opening) => {
      // The socket reads nothing until the simulated service listens on it, then gets what opened it there too.
      ws.pause();
      void this.#parts.handOver(ws, socket, origin.key, origin.url).then(() => {
        const answer = () => {
          ws.emit('message', frame, isBinary);
          ws.resume();
        };
        if (opening.length === 0) return answer();
        afterAcknowledged(ws, answer);
        for (const earlier of opening) ws.emit('message', earlier, false);
      });
    });
    return true;
  }

  #closed(connection: ReplayConnection): void {
    if (!this.connections.delete(connection)) return;
    const recorded = connection.script.connection;
    this.#reached.set(recorded, Math.max(this.#reached.get(recorded) ?? 0, connection.used.size));
  }

  /** The most client frames of a recorded connection one live connection went through. */
  #reachedOf(recorded: RecordedConnection): number {
    let reached = this.#reached.get(recorded) ?? 0;
    for (const live of this.connections)
      if (live.script.connection === recorded) reached = Math.max(reached, live.used.size);
    return reached;
  }

  report(): ReplayReport {
    const { recording } = this.#settings;
    const scripts = this.#scripts ?? new Map<RecordedConnection, Script>();
    return {
      unusedConnections: recording.connections
        .filter((connection) => !this.#usedConnections.has(connection))
        .map(({ id, transport, request }) => ({
          id,
          transport,
          path: redactUrl(request.path + queryText(request.query)),
        })),
      unusedRequests: recording.requests
        .filter((exchange) => !this.#rest.used.has(exchange))
        .map(({ id, method, request }) => ({ id, method, path: redactUrl(request.path + queryText(request.query)) })),
      unreachedFrames: [...this.#usedConnections]
        .filter((connection) => !connection.refused)
        .map((connection) => ({
          connection: connection.id,
          frames: (scripts.get(connection)?.steps.length ?? 0) - this.#reachedOf(connection),
        }))
        .filter(({ frames }) => frames > 0),
      unmatched: this.#unmatched,
    };
  }

  /** Closes every replayed connection (1001; one that does not answer is dropped after a while) and stops every wait. */
  async close(): Promise<void> {
    this.#waits.close();
    const closing = [...this.connections].map(
      (connection) =>
        new Promise<void>((resolve) => {
          connection.onClosed(resolve);
          connection.close(CLOSE_GOING_AWAY, 'server shutting down');
        }),
    );
    const deadline = setTimeout(() => {
      for (const connection of this.connections) connection.terminate();
    }, CLOSE_DEADLINE_MS);
    await Promise.all(closing);
    clearTimeout(deadline);
    this.#wss.close();
  }
}
