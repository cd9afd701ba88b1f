import { epochToIso } from './dates.js';
import { isErrorCode, type ErrorCode } from './errors.js';
import { isPlainObject } from './objects.js';
import { MAX_POST_ID_BYTES } from './limits.js';
import type { Envelope, Post, ServerEventName, TreeItem } from './types.js';

/** One serialized server event: `{"event","data"[,"requestId"]}`. */
export function encodeEvent(event: ServerEventName, data: unknown, requestId?: string): string {
  const envelope: Envelope = requestId === undefined ? { event, data } : { event, data, requestId };
  return JSON.stringify(envelope);
}

export function encodeError(code: ErrorCode, message: string, command?: string, requestId?: string): string {
  return encodeEvent('error', command === undefined ? { code, message } : { code, message, command }, requestId);
}

// --- tolerant reading (PROTOCOL.md B3): what a client accepts from any server ---

// A hand-written reader rather than a schema: it normalizes more than it
// validates, runs for every post a client receives, and keeps the validation
// library off the client's start-up path.

/** A date as an ISO string: strings pass as they are, epoch milliseconds are converted; null when unusable. */
function readDate(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return epochToIso(value) ?? null;
  return null;
}

const WRONG_TYPE = Symbol('wrong type');

/** `{ [name]: value }` when the value is usable, else nothing: optional fields stay absent, not undefined. */
function onlyIf<K extends string, V>(name: K, value: V | null | undefined): { [key in K]?: V } {
  return value === undefined || value === null ? {} : ({ [name]: value } as { [key in K]?: V });
}

/** Optional field of one type: the value, undefined when absent, or WRONG_TYPE. */
function optional<T>(value: unknown, check: (value: unknown) => value is T): T | undefined | typeof WRONG_TYPE {
  if (value === undefined || value === null) return undefined;
  return check(value) ? value : WRONG_TYPE;
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** A post id as a client keeps it: a string of at most MAX_POST_ID_BYTES; a longer one would cost memory without bound. */
export function isPostId(value: unknown): value is string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: most ids are settled without encoding them.
  return (
    typeof value === 'string' &&
    value !== '' &&
    (value.length * 3 <= MAX_POST_ID_BYTES || Buffer.byteLength(value) <= MAX_POST_ID_BYTES)
  );
}

/** `connected.rateLimit` when it is usable: positive numbers both. */
function readRateLimit(value: unknown): RateLimit | undefined {
  if (!isPlainObject(value)) return undefined;
  const { perSecond, burst } = value;
  return typeof perSecond === 'number' &&
    perSecond > 0 &&
    Number.isFinite(perSecond) &&
    typeof burst === 'number' &&
    burst >= 1 &&
    Number.isFinite(burst)
    ? { perSecond, burst }
    : undefined;
}
const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';

/** Any post a server might send: `content` for `text`, epoch ms for dates, missing fields defaulted; undefined when unusable. */
function tolerantPost(raw: Record<string, unknown>): Post | undefined {
  const { id, streamId } = raw;
  if (!isPostId(id) || typeof streamId !== 'string') return undefined;
  const streamName = optional(raw['streamName'], isString);
  const text = optional(raw['text'], isString);
  const content = optional(raw['content'], isString);
  const contentType = optional(raw['contentType'], isString);
  const hidden = optional(raw['hidden'], isBoolean);
  const customTarget = optional(raw['customTarget'], isString);
  const createdAt = readDate(raw['createdAt']);
  const releaseAt = readDate(raw['releaseAt']);
  if ([streamName, text, content, contentType, hidden, customTarget].includes(WRONG_TYPE)) return undefined;
  if (createdAt === null && raw['createdAt'] !== null) return undefined;
  if (releaseAt === null && raw['releaseAt'] !== null) return undefined;
  return {
    id,
    streamId,
    streamName: (streamName as string | undefined) ?? streamId,
    text: (text as string | undefined) ?? (content as string | undefined) ?? null,
    contentType: contentType === 'markdown' ? 'markdown' : 'rawtext',
    createdAt: createdAt ?? new Date(0).toISOString(),
    releaseAt: releaseAt ?? null,
    hidden: (hidden as boolean | undefined) ?? false,
    customTarget: (customTarget as string | undefined) ?? null,
    ...metadataOf(raw),
  };
}

/** `metadata` (B6) when the post carries it as an object; null (a hidden post's) and anything else are left out. */
function metadataOf(raw: Record<string, unknown>): Pick<Post, 'metadata'> {
  const metadata = raw['metadata'];
  return isPlainObject(metadata) ? { metadata } : {};
}

const nullableString = (value: unknown) => value === null || typeof value === 'string';

/** A post exactly as this contract writes it: the common case, read without the schema's cost. */
function canonicalPost(value: Record<string, unknown>): Post | undefined {
  const { id, streamId, streamName, text, contentType, createdAt, releaseAt, hidden, customTarget } = value;
  if (
    !('content' in value) &&
    isPostId(id) &&
    typeof streamId === 'string' &&
    typeof streamName === 'string' &&
    nullableString(text) &&
    (contentType === 'rawtext' || contentType === 'markdown') &&
    typeof createdAt === 'string' &&
    nullableString(releaseAt) &&
    typeof hidden === 'boolean' &&
    nullableString(customTarget)
  ) {
    return {
      id,
      streamId,
      streamName,
      text,
      contentType,
      createdAt,
      releaseAt,
      hidden,
      customTarget,
      ...metadataOf(value),
    } as Post;
  }
  return undefined;
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) && value.every(isString) ? value : [];
}

export function parsePost(value: unknown): Post | undefined {
  if (!isPlainObject(value)) return undefined;
  const canonical = canonicalPost(value);
  if (canonical) return canonical;
  return tolerantPost(value);
}

/** A command limit as `connected.rateLimit` states it. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

export type ServerMessage =
  | {
      kind: 'connected';
      userId: string;
      streams: string[];
      /** The service's clock at connection (ISO), when it says. */
      serverTime?: string;
      /** The one stream a stream key publishes to, when it says. */
      streamId?: string;
      /** This connection's command limit, when the service says (absent: none stated). */
      rateLimit?: RateLimit;
      requestId?: string;
    }
  | {
      kind: 'sub_ack';
      command: string;
      streamIds: string[];
      /** Absent when the service does not say. */
      lastPosts?: number;
      /** How many history messages follow, when the service says. */
      history?: number;
      requestId?: string;
    }
  | { kind: 'post'; released: boolean; post: Post; requestId?: string }
  | { kind: 'ack'; post: Post; duplicate: boolean; requestId?: string }
  | { kind: 'error'; code: ErrorCode | string; message: string; command?: string; requestId?: string }
  | { kind: 'tree'; item: TreeItem }
  | { kind: 'ignored'; event?: string };

/** Reads one server frame the tolerant way; unknown events come back as `ignored`. */
export function parseServerMessage(text: string): ServerMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: 'ignored' };
  }
  if (!isPlainObject(raw)) return { kind: 'ignored' };
  const message = raw;
  const event = message['event'];
  if (typeof event !== 'string') {
    return isPostId(message['_id']) ? { kind: 'tree', item: message as unknown as TreeItem } : { kind: 'ignored' };
  }
  const requestId = typeof message['requestId'] === 'string' ? { requestId: message['requestId'] } : {};
  const data = isPlainObject(message['data']) ? message['data'] : {};
  switch (event) {
    case 'connected':
      return {
        kind: 'connected',
        userId: String(data['userId'] ?? ''),
        streams: stringArray(data['streams']),
        ...onlyIf('serverTime', readDate(data['serverTime'])),
        ...onlyIf('streamId', typeof data['streamId'] === 'string' ? data['streamId'] : undefined),
        ...onlyIf('rateLimit', readRateLimit(data['rateLimit'])),
        ...requestId,
      };
    case 'sub_ack':
      return {
        kind: 'sub_ack',
        command: String(data['command'] ?? ''),
        streamIds: stringArray(data['streamIds']),
        ...onlyIf('lastPosts', data['lastPosts'] === undefined ? undefined : Number(data['lastPosts'])),
        ...onlyIf('history', Number.isSafeInteger(data['history']) ? (data['history'] as number) : undefined),
        ...requestId,
      };
    case 'stream.post.created':
    case 'stream.post.released': {
      const post = parsePost(data);
      return post
        ? { kind: 'post', released: event === 'stream.post.released', post, ...requestId }
        : { kind: 'ignored', event };
    }
    case 'ack': {
      const post = parsePost(data['post']);
      return post
        ? { kind: 'ack', post, duplicate: data['duplicate'] === true, ...requestId }
        : { kind: 'ignored', event };
    }
    case 'error': {
      const code = data['code'];
      const command = typeof data['command'] === 'string' ? { command: data['command'] } : {};
      return {
        kind: 'error',
        code: isErrorCode(code) ? code : String(code ?? 'internal'),
        message: String(data['message'] ?? ''),
        ...command,
        ...requestId,
      };
    }
    default:
      return { kind: 'ignored', event };
  }
}
