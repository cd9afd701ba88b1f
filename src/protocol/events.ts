import { z } from 'zod';
import { epochToIso } from './dates.js';
import { isErrorCode, type ErrorCode } from './errors.js';
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

const dateLike = z.union([z.string(), z.number()]).transform((value, context) => {
  if (typeof value === 'string') return value;
  const iso = epochToIso(value);
  if (iso === undefined) {
    context.addIssue({ code: 'custom', message: 'not a representable epoch time' });
    return z.NEVER;
  }
  return iso;
});

const postSchema = z
  .object({
    id: z.string(),
    streamId: z.string(),
    streamName: z.string().optional(),
    text: z.string().nullish(),
    content: z.string().nullish(),
    contentType: z.string().optional(),
    createdAt: dateLike.optional(),
    releaseAt: dateLike.nullish(),
    hidden: z.boolean().optional(),
    customTarget: z.string().nullish(),
  })
  .transform(
    (raw): Post => ({
      id: raw.id,
      streamId: raw.streamId,
      streamName: raw.streamName ?? raw.streamId,
      text: raw.text ?? raw.content ?? null,
      contentType: raw.contentType === 'markdown' ? 'markdown' : 'rawtext',
      createdAt: raw.createdAt ?? new Date(0).toISOString(),
      releaseAt: raw.releaseAt ?? null,
      hidden: raw.hidden ?? false,
      customTarget: raw.customTarget ?? null,
    }),
  );

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const nullableString = (value: unknown) => value === null || typeof value === 'string';

/** A post exactly as this contract writes it: the common case, read without the schema's cost. */
function canonicalPost(value: Record<string, unknown>): Post | undefined {
  const { id, streamId, streamName, text, contentType, createdAt, releaseAt, hidden, customTarget } = value;
  if (
    !('content' in value) &&
    typeof id === 'string' &&
    typeof streamId === 'string' &&
    typeof streamName === 'string' &&
    nullableString(text) &&
    (contentType === 'rawtext' || contentType === 'markdown') &&
    typeof createdAt === 'string' &&
    nullableString(releaseAt) &&
    typeof hidden === 'boolean' &&
    nullableString(customTarget)
  ) {
    return { id, streamId, streamName, text, contentType, createdAt, releaseAt, hidden, customTarget } as Post;
  }
  return undefined;
}

export function parsePost(value: unknown): Post | undefined {
  if (!isRecord(value)) return undefined;
  const canonical = canonicalPost(value);
  if (canonical) return canonical;
  const result = postSchema.safeParse(value);
  return result.success ? result.data : undefined;
}

export type ServerMessage =
  | { kind: 'connected'; userId: string; streams: string[]; requestId?: string }
  | { kind: 'sub_ack'; command: string; streamIds: string[]; lastPosts: number; requestId?: string }
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
  if (!isRecord(raw)) return { kind: 'ignored' };
  const message = raw;
  const event = message['event'];
  if (typeof event !== 'string') {
    return typeof message['_id'] === 'string' ? { kind: 'tree', item: message as unknown as TreeItem } : { kind: 'ignored' };
  }
  const requestId = typeof message['requestId'] === 'string' ? { requestId: message['requestId'] } : {};
  const data = isRecord(message['data']) ? message['data'] : {};
  switch (event) {
    case 'connected':
      return {
        kind: 'connected',
        userId: String(data['userId'] ?? ''),
        streams: z.array(z.string()).catch([]).parse(data['streams']),
        ...requestId,
      };
    case 'sub_ack':
      return {
        kind: 'sub_ack',
        command: String(data['command'] ?? ''),
        streamIds: z.array(z.string()).catch([]).parse(data['streamIds']),
        lastPosts: Number(data['lastPosts'] ?? 0),
        ...requestId,
      };
    case 'stream.post.created':
    case 'stream.post.released': {
      const post = parsePost(data);
      return post ? { kind: 'post', released: event === 'stream.post.released', post, ...requestId } : { kind: 'ignored', event };
    }
    case 'ack': {
      const post = parsePost(data['post']);
      return post ? { kind: 'ack', post, duplicate: data['duplicate'] === true, ...requestId } : { kind: 'ignored', event };
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

