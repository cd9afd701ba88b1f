// The recording format `serve --record` writes and `serve --replay` reads (PROTOCOL.md B9): one
// versioned JSON document, readable and diffable, that never holds a secret. Types only and the
// names both ends agree on; the writer, the proxy and the replay service live in the server.

/** What a recording says it is, so a reader can refuse another document early and by name. */
export const RECORDING_FORMAT = 'stream-posts-recording';
/** Raised when a change would make an older reader misread a newer file. */
export const RECORDING_VERSION = 1;

/** A JSON value as parsed. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** How a connection reached the service: which of the protocol's transports it speaks. */
export type RecordedTransport =
  /** `/v1/ws` with the key in a header or the query, commands as JSON frames (both dialects). */
  | 'ws'
  /** The hosted URL form: `/v1/ws/{apiKey}?streamIds=…` (subscribed by the address alone). */
  | 'url-form'
  /** A tree feed address (`/graphql?format=tree`, or `/v1/ws?format=tree`): tree items, `login KEY`. */
  | 'tree'
  /** graphql-ws on `/graphql` (`streamPostCreated`). */
  | 'graphql';

/** Which dialect the upstream spoke, as detected from its first frames (`connected` with `hello=1` fields or not). */
export type RecordedDialect = 'hosted' | 'stream-posts' | 'unknown';

/** What kind of secret a placeholder stands for. */
export type RedactionKind = 'api-key' | 'upload-url' | 'admin-token' | 'field';

/** One kind of replacement made before anything reached the disk; never the value. */
export interface RedactionNote {
  kind: RedactionKind;
  /** `<key-1>`, `<upload-1>`, …, or the replacement text of a `--record-redact` field. */
  placeholder: string;
  /** How many places it was put in. */
  count: number;
  /** For `field`: the JSONPath given with `--record-redact`. */
  path?: string;
}

export interface RecordingMeta {
  format: typeof RECORDING_FORMAT;
  version: typeof RECORDING_VERSION;
  /** When recording started (ISO 8601); every `at` below counts from it. */
  recordedAt: string;
  /** The upstream's origin (`wss://host[:port]`), never a path, query or key. */
  upstream: string;
  tool: { name: 'stream-posts'; version: string };
  dialect: RecordedDialect;
  redactions: RedactionNote[];
  /** True when `--record-max` was reached: exchanges after that point were proxied, not recorded. */
  truncated: boolean;
}

/** A handshake or request, as the client sent it, secrets replaced. */
export interface RecordedRequestHead {
  /** The path, with a key in it (the URL form) replaced by its placeholder. */
  path: string;
  /** The query's parameters in their order, keys replaced (`[['apiKey', '<key-1>'], ['streamIds', 'a,b']]`). */
  query: [name: string, value: string][];
  /** Only the headers the recorder keeps (content-type, sec-websocket-protocol, x-api-key, authorization, …), names in lower case, secrets replaced. */
  headers: Record<string, string>;
}

/** A body: parsed JSON where it was JSON, else text where it was text (UTF-8), else base64. */
export type RecordedBody = { json: Json } | { text: string } | { base64: string };

/** One event on a WebSocket connection, `t` ms from the connection's start. */
export type RecordedEvent =
  | { t: number; from: 'client' | 'server'; op: 'text'; json: Json }
  | { t: number; from: 'client' | 'server'; op: 'text'; text: string }
  | { t: number; from: 'client' | 'server'; op: 'binary'; base64: string }
  | { t: number; from: 'client' | 'server'; op: 'ping' | 'pong'; data?: string }
  | { t: number; from: 'client' | 'server'; op: 'close'; code: number; reason: string };

/** One WebSocket connection, from the upgrade to the close. */
export interface RecordedConnection {
  /** Its place in the recording (1, 2, …), by the time it opened. */
  id: number;
  /** When it opened, ms from `meta.recordedAt`. */
  at: number;
  transport: RecordedTransport;
  request: RecordedRequestHead;
  /** The subprotocol the upstream chose (`graphql-transport-ws`), if any. */
  subprotocol?: string;
  /** An upgrade the upstream refused: its HTTP answer, and no events. */
  refused?: { status: number; headers: Record<string, string>; body?: RecordedBody };
  events: RecordedEvent[];
}

/** One REST request and its answer. */
export interface RecordedExchange {
  id: number;
  /** When the request started, ms from `meta.recordedAt`. */
  at: number;
  method: string;
  request: RecordedRequestHead & { body?: RecordedBody };
  response: {
    /** ms from the request's start to the answer's end. */
    t: number;
    status: number;
    headers: Record<string, string>;
    body?: RecordedBody;
  };
}

export interface Recording {
  meta: RecordingMeta;
  connections: RecordedConnection[];
  requests: RecordedExchange[];
}

/** The placeholder of the n-th distinct API key seen (1-based): stable within one recording. */
export const keyPlaceholder = (n: number): string => `<key-${n}>`;
/** The placeholder of the n-th distinct upload token or signature seen. */
export const uploadPlaceholder = (n: number): string => `<upload-${n}>`;
/** Whether a recorded value is a key placeholder (which any key presented at replay stands for). */
export const KEY_PLACEHOLDER = /^<key-\d+>$/;
