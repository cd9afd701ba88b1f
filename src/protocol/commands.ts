import * as z from 'zod/mini';
import { parseIsoDateTime } from './dates.js';
import { ProtocolError } from './errors.js';
import { isPlainObject } from './objects.js';
import { API_KEY_QUERY, HELLO_QUERY } from './paths.js';
import { splitStreamIds } from './stream-ids.js';
import {
  MAX_CONTENT_BYTES,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LAST_POSTS,
  MAX_REQUEST_ID_LENGTH,
  STREAM_ID_PATTERN,
} from './limits.js';
import {
  COMMANDS,
  CONTENT_TYPES,
  DEFAULT_CONTENT_TYPE,
  PUBLISH_COMMAND,
  type Command,
  type ContentType,
  type CommandName,
  type PublishArgs,
  type SubscribeArgs,
} from './types.js';

const nonNegativeIntegerString = /^\s*\d+\s*$/;
const LAST_POSTS_RANGE = { error: `lastPosts must be an integer from 0 to ${MAX_LAST_POSTS}` };

// zod's "mini" build: the same validation, a fraction of the code to load,
// which keeps `post --dry-run` and `serve` quick to start.
const lastPostsSchema = z.pipe(
  z.union(
    [z.number(), z.pipe(z.string().check(z.regex(nonNegativeIntegerString)), z.transform(Number))],
    LAST_POSTS_RANGE,
  ),
  z.int(LAST_POSTS_RANGE).check(z.gte(0, LAST_POSTS_RANGE), z.lte(MAX_LAST_POSTS, LAST_POSTS_RANGE)),
);

export { splitStreamIds };

const streamIdsSchema = z.pipe(
  z.union([z.string(), z.array(z.string())], {
    error: 'streamIds must be a comma-separated string or an array of strings',
  }),
  z.transform((ids: string | string[]) => splitStreamIds(ids)),
);

const subscribeSchema = z.object({
  streamIds: z.pipe(
    z.optional(streamIdsSchema),
    z.transform((ids: string[] | undefined) => ids ?? []),
  ),
  lastPosts: z.pipe(
    z.optional(lastPostsSchema),
    z.transform((n: number | undefined) => n ?? 0),
  ),
});

const isoDateTimeSchema = z.string({ error: 'releaseAt must be a string' }).check(
  z.refine((text: string) => parseIsoDateTime(text) !== undefined, {
    error: 'releaseAt must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T09:30:00Z',
  }),
);

const optionalNullable = <T>(schema: z.ZodMiniType<T>) =>
  z.pipe(
    z.nullish(schema),
    z.transform((value: T | null | undefined) => value ?? null),
  );

const IDEMPOTENCY_KEY_LENGTH = { error: `idempotencyKey must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters` };

const publishSchema = z.object({
  streamId: z
    .string({ error: 'streamId is required and must be a string' })
    .check(z.regex(STREAM_ID_PATTERN, { error: 'streamId must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"' })),
  content: z.string({ error: 'content is required and must be a string' }).check(
    z.minLength(1, { error: 'content must not be empty' }),
    z.refine((text: string) => Buffer.byteLength(text, 'utf8') <= MAX_CONTENT_BYTES, {
      error: `content must be at most ${MAX_CONTENT_BYTES} bytes as UTF-8`,
    }),
  ),
  // Omitted → rawtext (PROTOCOL.md B4): public publishers send none and read their posts back as plain text.
  contentType: z.pipe(
    z.nullish(z.enum(CONTENT_TYPES, { error: 'contentType must be "rawtext" or "markdown"' })),
    z.transform((type: ContentType | null | undefined): ContentType => type ?? DEFAULT_CONTENT_TYPE),
  ),
  releaseAt: optionalNullable(isoDateTimeSchema),
  customTarget: optionalNullable(
    z
      .string({ error: 'customTarget must be a string' })
      .check(z.minLength(1, { error: 'customTarget must not be empty' })),
  ),
  idempotencyKey: optionalNullable(
    z
      .string({ error: 'idempotencyKey must be a string' })
      .check(z.minLength(1, IDEMPOTENCY_KEY_LENGTH), z.maxLength(MAX_IDEMPOTENCY_KEY_LENGTH, IDEMPOTENCY_KEY_LENGTH)),
  ),
});

function parseWith<T>(schema: z.ZodMiniType<T>, data: unknown, command: CommandName): T {
  const result = schema.safeParse(data);
  if (!result.success) {
    // Every schema above words its own messages, naming the field; zod's defaults name none.
    throw new ProtocolError('invalid-argument', result.error.issues[0]?.message ?? 'invalid arguments', command);
  }
  return result.data;
}

export function parseSubscribeArgs(data: unknown, command: CommandName): SubscribeArgs {
  return parseWith(subscribeSchema, data, command);
}

export function parsePublishArgs(data: unknown): PublishArgs {
  return parseWith(publishSchema, data, PUBLISH_COMMAND);
}

export function isCommandName(value: string): value is CommandName {
  return (COMMANDS as readonly string[]).includes(value);
}

/** Validates the arguments of a known command, whichever way they arrived. */
export function parseCommandArgs(event: CommandName, data: unknown, requestId?: string): Command {
  const args = data ?? {};
  if (!isPlainObject(args)) {
    throw new ProtocolError('invalid-argument', 'data must be an object of arguments', event);
  }
  const withId = requestId === undefined ? {} : { requestId };
  if (event === PUBLISH_COMMAND) return { event, data: parsePublishArgs(args), ...withId };
  return { event, data: parseSubscribeArgs(args, event), ...withId };
}

export type FrameParseResult = { ok: true; command: Command } | { ok: false; error: ProtocolError; requestId?: string };

/**
 * Parses one client text frame. Never throws: every failure becomes a
 * ProtocolError carrying the requestId when one could be read.
 */
export function parseCommandFrame(text: string): FrameParseResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: new ProtocolError('bad-json', 'the frame is not valid JSON') };
  }
  if (!isPlainObject(raw)) {
    return {
      ok: false,
      error: new ProtocolError('bad-request', 'a command must be a JSON object {"event": "...", "data": {...}}'),
    };
  }
  const requestIdValue = raw['requestId'];
  if (
    requestIdValue !== undefined &&
    (typeof requestIdValue !== 'string' || requestIdValue.length > MAX_REQUEST_ID_LENGTH)
  ) {
    return {
      ok: false,
      error: new ProtocolError(
        'bad-request',
        `requestId must be a string of at most ${MAX_REQUEST_ID_LENGTH} characters`,
      ),
    };
  }
  const requestId = requestIdValue;
  const withId = requestId === undefined ? {} : { requestId };
  const event = raw['event'];
  if (typeof event !== 'string') {
    return { ok: false, error: new ProtocolError('bad-request', 'event must be a string naming a command'), ...withId };
  }
  if (!isCommandName(event)) {
    return {
      ok: false,
      error: new ProtocolError(
        'unknown-command',
        `unknown command "${event.slice(0, 64)}"; expected one of ${COMMANDS.join(', ')}`,
      ),
      ...withId,
    };
  }
  try {
    return { ok: true, command: parseCommandArgs(event, raw['data'], requestId) };
  } catch (error) {
    if (error instanceof ProtocolError) return { ok: false, error, ...withId };
    throw error;
  }
}

/** Turns URL query parameters (all strings) into a command's data object. */
export function queryToArgs(params: URLSearchParams): Record<string, string> {
  const args: Record<string, string> = {};
  for (const [name, value] of params) {
    if (name === API_KEY_QUERY || name === HELLO_QUERY) continue;
    args[name] = value;
  }
  return args;
}
