// The recording as it grows: connections and their events, REST exchanges, what the upstream's
// dialect turned out to be, and the size bound past which recording stops (proxying does not).
import {
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type Json,
  type RecordedBody,
  type RecordedConnection,
  type RecordedDialect,
  type RecordedEvent,
  type RecordedExchange,
  type RecordedRequestHead,
  type RecordedTransport,
  type Recording,
} from '../../protocol/recording.js';
import type { Logger } from '../logger.js';
import { learnClientText, learnServerText } from './handshake.js';
import { RecordSecrets } from './secrets.js';

/** What an event costs the recording besides its text (its `t`, `from`, `op` and punctuation). */
const EVENT_OVERHEAD = 48;
const EXCHANGE_OVERHEAD = 256;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

export interface RecorderOptions {
  /** The upstream's origin (`wss://host:port`). */
  upstream: string;
  toolVersion: string;
  /** Bytes of recording kept before recording stops. */
  maxBytes: number;
  logger: Logger;
}

type Side = 'client' | 'server';

/** A text as the recording keeps it: parsed JSON when it was JSON, else the text. */
type Kept = { json: Json } | { text: string };

function parseJson(text: string): Json | undefined {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[' && first !== '"') return undefined;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

export class Recorder {
  readonly secrets = new RecordSecrets();
  readonly #options: RecorderOptions;
  readonly #started = performance.now();
  readonly #recordedAt = new Date().toISOString();
  readonly #connections: RecordedConnection[] = [];
  readonly #requests: RecordedExchange[] = [];
  #bytes = 0;
  #truncated = false;
  #dialect: RecordedDialect = 'unknown';
  /** A post fanned out to many subscribers arrives as the same text on each: parsed and scrubbed once. */
  readonly #kept = new Map<string, Kept>();
  #keptFor = -1;

  constructor(options: RecorderOptions) {
    this.#options = options;
  }

  /** Whether events are still being recorded (false once `maxBytes` was reached). */
  get recording(): boolean {
    return !this.#truncated;
  }

  /** ms since recording started. */
  now(): number {
    return performance.now() - this.#started;
  }

  /** Takes room for `bytes` more; past the bound, recording stops for good, with one warning. */
  #take(bytes: number): boolean {
    if (this.#truncated) return false;
    if (this.#bytes + bytes <= this.#options.maxBytes) {
      this.#bytes += bytes;
      return true;
    }
    this.#truncated = true;
    this.#options.logger.log('warn', 'recording stopped: the recording reached --record-max; proxying goes on', {
      maxBytes: this.#options.maxBytes,
    });
    return false;
  }

  /** A text of `side`, secrets learned from it first, then replaced. */
  keep(side: Side, raw: string): Kept {
    this.#forgetStale();
    const known = this.#kept.get(raw);
    if (known) return known;
    const parsed = parseJson(raw);
    if (side === 'client') learnClientText(this.secrets, raw, parsed);
    else learnServerText(this.secrets, raw, parsed);
    this.#forgetStale();
    // String by string: a key written with JSON escapes inside a string (`\\u0061…` in the
    // frame's text) is only whole once the JSON is parsed.
    const kept: Kept = parsed === undefined ? { text: this.secrets.scrub(raw) } : { json: this.#scrubJson(parsed) };
    // What a client sent is seldom sent again; what the service fans out is.
    if (side === 'server') {
      if (this.#kept.size >= 256) this.#kept.delete(this.#kept.keys().next().value!);
      this.#kept.set(raw, kept);
    }
    if ('json' in kept) this.#noteDialect(kept.json);
    return kept;
  }

  #scrubJson(value: Json): Json {
    if (typeof value === 'string') return this.secrets.scrub(value);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((item) => this.#scrubJson(item));
    const out: { [key: string]: Json } = {};
    for (const [name, inner] of Object.entries(value)) out[this.secrets.scrub(name)] = this.#scrubJson(inner);
    return out;
  }

  /** Texts kept before a secret was learned may hold it: they are kept again. */
  #forgetStale(): void {
    if (this.#keptFor === this.secrets.version) return;
    this.#kept.clear();
    this.#keptFor = this.secrets.version;
  }

  /**
   * Our dialect's `connected` states the rate limit (`hello=1`, when one is set), and only our
   * dialect sends `stream.post.released`; the hosted one does neither.
   */
  #noteDialect(json: Json): void {
    if (this.#dialect === 'stream-posts' || json === null || typeof json !== 'object' || Array.isArray(json)) return;
    if (json['event'] === 'stream.post.released') this.#dialect = 'stream-posts';
    if (json['event'] !== 'connected') return;
    const data = json['data'];
    const ours = data !== null && typeof data === 'object' && !Array.isArray(data) && 'rateLimit' in data;
    this.#dialect = ours ? 'stream-posts' : 'hosted';
  }

  /** A body as recorded: JSON where it parses, text where it is UTF-8, else base64. */
  body(side: Side, bytes: Buffer): RecordedBody | undefined {
    if (bytes.length === 0) return undefined;
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      return { base64: bytes.toString('base64') };
    }
    return this.keep(side, text);
  }

  /** A new connection's record, or undefined once recording has stopped. */
  connection(transport: RecordedTransport, request: RecordedRequestHead, at: number): ConnectionRecord | undefined {
    if (!this.#take(EXCHANGE_OVERHEAD + JSON.stringify(request).length)) return undefined;
    const connection: RecordedConnection = {
      id: this.#connections.length + 1,
      at: Math.round(at),
      transport,
      request,
      events: [],
    };
    this.#connections.push(connection);
    return new ConnectionRecord(this, connection, at);
  }

  /** Records an event of a connection when there is room. */
  addEvent(connection: RecordedConnection, event: RecordedEvent, size: number): void {
    if (this.#take(EVENT_OVERHEAD + size)) connection.events.push(event);
  }

  /** A REST exchange, when there is room. */
  exchange(exchange: Omit<RecordedExchange, 'id'>, size: number): void {
    if (this.#take(EXCHANGE_OVERHEAD + size)) this.#requests.push({ id: this.#requests.length + 1, ...exchange });
  }

  /** The recording as it stands. */
  document(): Recording {
    return {
      meta: {
        format: RECORDING_FORMAT,
        version: RECORDING_VERSION,
        recordedAt: this.#recordedAt,
        upstream: this.#options.upstream,
        tool: { name: 'stream-posts', version: this.#options.toolVersion },
        dialect: this.#dialect,
        redactions: this.secrets.notes(),
        truncated: this.#truncated,
      },
      connections: this.#connections,
      requests: this.#requests,
    };
  }
}

/** One WebSocket connection's events, timed from its start. */
export class ConnectionRecord {
  constructor(
    readonly recorder: Recorder,
    readonly connection: RecordedConnection,
    readonly start: number,
  ) {}

  #t(): number {
    return Math.round(this.recorder.now() - this.start);
  }

  frame(from: Side, data: Buffer, binary: boolean): void {
    if (!this.recorder.recording) return;
    const t = this.#t();
    if (binary) {
      const base64 = data.toString('base64');
      this.recorder.addEvent(this.connection, { t, from, op: 'binary', base64 }, base64.length);
      return;
    }
    const kept = this.recorder.keep(from, data.toString('utf8'));
    this.recorder.addEvent(this.connection, { t, from, op: 'text', ...kept }, data.length);
  }

  control(from: Side, op: 'ping' | 'pong', data: Buffer): void {
    if (!this.recorder.recording) return;
    const text = data.length === 0 ? undefined : this.recorder.secrets.scrub(data.toString('utf8'));
    this.recorder.addEvent(
      this.connection,
      { t: this.#t(), from, op, ...(text === undefined ? {} : { data: text }) },
      data.length,
    );
  }

  close(from: Side, code: number, reason: string): void {
    if (!this.recorder.recording) return;
    this.recorder.addEvent(
      this.connection,
      { t: this.#t(), from, op: 'close', code, reason: this.recorder.secrets.scrub(reason) },
      reason.length,
    );
  }

  chose(subprotocol: string): void {
    if (subprotocol !== '') this.connection.subprotocol = subprotocol;
  }

  refused(status: number, headers: Record<string, string>, body: RecordedBody | undefined): void {
    this.connection.refused = { status, headers, ...(body === undefined ? {} : { body }) };
  }
}
