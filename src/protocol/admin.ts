import { ERROR_CODES, isErrorCode, ProtocolError } from './errors.js';
import { MAX_FRAME_BYTES } from './limits.js';

/** What one keep-alive round did (`POST /_admin/keep-alive`): peers pinged, and peers terminated for leaving the last round's ping unanswered. */
export interface KeepAliveRound {
  pinged: number;
  terminated: number;
}

/** What `GET /_admin/state` answers, and the library's `server.state()` resolves to. */
export interface AdminState {
  connections: number;
  subscriptions: number;
  posts: number;
  scheduledReleases: number;
  idempotencyKeys: number;
  /** The service's clock (wall clock plus every advance), ISO 8601. */
  now: string;
  clockOffsetMs: number;
  /** The injected faults in force on this instance. */
  faults: Fault[];
  /** Under `serve --workers`: the workers asked, and whether each answered in time. */
  workers?: WorkerAnswered[];
}

/**
 * A worker of `serve --workers` that an admin request was put to (`w2`, as connection ids
 * name it) and whether it answered within the deadline; what one that did not holds is
 * missing from the reply.
 */
export interface WorkerAnswered {
  id: string;
  answered: boolean;
}

/** One open WebSocket connection, as `GET /_admin/connections` lists it. Keys never appear. */
export interface ConnectionInfo {
  /** Stable for the connection's life, unique for the server's. */
  id: string;
  /** The key's user, or null until the key is checked. */
  user: string | null;
  /** The stream of a stream key; null for a reader key. */
  stream: string | null;
  kind: 'user' | 'stream';
  subscriptions: { streamIds: string[]; format: 'post' | 'tree' }[];
  bufferedBytes: number;
  connectedAt: string;
  remoteAddress: string | null;
}

/** Which connections (and publishes) a fault applies to: every field given must match. No scope: all. */
export interface FaultScope {
  user?: string;
  /** Connections opened with that stream's key, and publishes to that stream. */
  stream?: string;
  connection?: string;
  /** An API key: never listed back (the listing shows `keyOwner`, the key's user or stream, instead). */
  key?: string;
}

/** A scope as listed: a key is replaced by whose it is. */
export interface FaultScopeView {
  user?: string;
  stream?: string;
  connection?: string;
  /** The user of a reader key, or the stream of a stream key, given as `key`. */
  keyOwner?: string;
}

/** A fault to inject, as `POST /_admin/faults` and `server.faults.add` take it. */
export type FaultInput = (
  | { type: 'close'; code?: number; reason?: string }
  | { type: 'refuse-connections'; status?: number }
  | { type: 'pause-deliveries' }
  | { type: 'delay-deliveries'; delayMs: number; jitterMs?: number }
  | { type: 'fail-publishes'; count?: number; code?: string; message?: string }
  | { type: 'drop-acks'; count?: number }
  | { type: 'stop-pongs' }
  | { type: 'go-silent' }
  | { type: 'send-frame'; frame: string }
) & {
  scope?: FaultScope;
  /** A lasting fault clears itself after this long (ms). */
  durationMs?: number;
};

export type FaultType = FaultInput['type'];

/** A fault as the service holds and lists it: normalized, with its id. */
export type Fault = (FaultInput extends infer Each ? (Each extends unknown ? Omit<Each, 'scope'> : never) : never) & {
  id: string;
  scope?: FaultScopeView;
  createdAt: string;
  /** When a `durationMs` fault clears itself. */
  expiresAt?: string;
  /** One-shot faults (`close`, `send-frame`): how many connections they were applied to. */
  applied?: number;
};

export const FAULT_TYPES = [
  'close',
  'refuse-connections',
  'pause-deliveries',
  'delay-deliveries',
  'fail-publishes',
  'drop-acks',
  'stop-pongs',
  'go-silent',
  'send-frame',
] as const satisfies readonly FaultType[];

/** Faults that act once, at once, and are not kept. */
export const ONE_SHOT_FAULTS: ReadonlySet<FaultType> = new Set(['close', 'send-frame']);

const SCOPE_FIELDS = ['user', 'stream', 'connection', 'key'] as const;
const FIELDS: Record<FaultType, readonly string[]> = {
  close: ['code', 'reason'],
  'refuse-connections': ['status'],
  'pause-deliveries': [],
  'delay-deliveries': ['delayMs', 'jitterMs'],
  'fail-publishes': ['count', 'code', 'message'],
  'drop-acks': ['count'],
  'stop-pongs': [],
  'go-silent': [],
  'send-frame': ['frame'],
};
const MAX_DELAY_MS = 600_000;
const MAX_DURATION_MS = 2_147_483_647;
const MAX_TEXT = 1024;

function invalid(message: string): ProtocolError {
  return new ProtocolError('invalid-argument', message);
}

function integer(raw: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw invalid(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

function text(raw: Record<string, unknown>, name: string, maxBytes: number): string | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || Buffer.byteLength(value) > maxBytes)
    throw invalid(`${name} must be a string of at most ${maxBytes} bytes`);
  return value;
}

/** Close codes a peer may be sent (RFC 6455 7.4): 1000-1014 but the reserved ones, and 3000-4999. */
export function isSendableCloseCode(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999)
  );
}

function parseScope(value: unknown): FaultScope | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('scope must be an object with user, stream, connection or key');
  const scope: FaultScope = {};
  for (const [name, field] of Object.entries(value)) {
    if (!(SCOPE_FIELDS as readonly string[]).includes(name))
      throw invalid(`scope.${name} is not a scope field (user, stream, connection, key)`);
    if (typeof field !== 'string' || field === '' || field.length > MAX_TEXT)
      throw invalid(`scope.${name} must be a non-empty string`);
    scope[name as (typeof SCOPE_FIELDS)[number]] = field;
  }
  return Object.keys(scope).length === 0 ? undefined : scope;
}

/**
 * Checks a fault as given (a parsed JSON object) and fills in its defaults. Errors are
 * `invalid-argument` naming the field. Whether a scope's key exists is the server's to check.
 */
export function parseFault(raw: unknown): FaultInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('a fault must be a JSON object');
  const body = raw as Record<string, unknown>;
  const type = body['type'];
  if (typeof type !== 'string' || !(FAULT_TYPES as readonly string[]).includes(type))
    throw invalid(`type must be one of ${FAULT_TYPES.join(', ')}`);
  const kind = type as FaultType;
  for (const name of Object.keys(body)) {
    if (name !== 'type' && name !== 'scope' && name !== 'durationMs' && !FIELDS[kind].includes(name))
      throw invalid(`${name} is not a field of a ${kind} fault`);
  }
  const scope = parseScope(body['scope']);
  const durationMs = integer(body, 'durationMs', 1, MAX_DURATION_MS);
  if (durationMs !== undefined && ONE_SHOT_FAULTS.has(kind))
    throw invalid(`durationMs does not apply to a ${kind} fault: it acts once, at once`);
  if (kind === 'refuse-connections' && scope?.connection !== undefined)
    throw invalid(
      'scope.connection cannot match a connection not yet open; refuse-connections takes user, stream or key',
    );
  const common = { ...(scope ? { scope } : {}), ...(durationMs === undefined ? {} : { durationMs }) };
  switch (kind) {
    case 'close': {
      const code = integer(body, 'code', 1000, 4999) ?? 1012;
      if (!isSendableCloseCode(code))
        throw invalid('code must be a close code that can be sent: 1000-1014 (not 1004-1006) or 3000-4999');
      const reason = text(body, 'reason', 123);
      return { type: kind, code, ...(reason === undefined ? {} : { reason }), ...common };
    }
    case 'refuse-connections':
      return { type: kind, status: integer(body, 'status', 400, 599) ?? 503, ...common };
    case 'delay-deliveries': {
      const delayMs = integer(body, 'delayMs', 0, MAX_DELAY_MS);
      if (delayMs === undefined) throw invalid('delayMs is required: an integer from 0 to 600000');
      return { type: kind, delayMs, jitterMs: integer(body, 'jitterMs', 0, MAX_DELAY_MS) ?? 0, ...common };
    }
    case 'fail-publishes': {
      const code = body['code'] ?? 'unavailable';
      if (!isErrorCode(code)) throw invalid(`code must be an error code: ${ERROR_CODES.join(', ')}`);
      const count = integer(body, 'count', 1, Number.MAX_SAFE_INTEGER);
      const message = text(body, 'message', MAX_TEXT);
      return {
        type: kind,
        code,
        ...(count === undefined ? {} : { count }),
        ...(message === undefined ? {} : { message }),
        ...common,
      };
    }
    case 'drop-acks': {
      const count = integer(body, 'count', 1, Number.MAX_SAFE_INTEGER);
      return { type: kind, ...(count === undefined ? {} : { count }), ...common };
    }
    case 'send-frame': {
      const frame = text(body, 'frame', MAX_FRAME_BYTES);
      if (frame === undefined) throw invalid('frame is required: the text to send');
      return { type: kind, frame, ...common };
    }
    default:
      return { type: kind, ...common };
  }
}
