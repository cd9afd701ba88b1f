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
const LAST_POSTS_RANGE = `lastPosts must be an integer from 0 to ${MAX_LAST_POSTS}`;
const IDEMPOTENCY_KEY_LENGTH = `idempotencyKey must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;

export { splitStreamIds };

// Two commands of a few fields each, checked by hand: every field has its own message, and this
// runs for every command a server reads and every post `post --batch` sends, and at the start of
// `post --dry-run` (a schema library costs more to load and to build than these checks take).
// Fields neither command knows are dropped, as the published interface ignores them.

function invalid(message: string, command: CommandName, field?: string): ProtocolError {
  return new ProtocolError('invalid-argument', message, command, field);
}

function subscribeStreamIds(value: unknown, command: CommandName): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return splitStreamIds(value);
  if (Array.isArray(value) && value.every((id) => typeof id === 'string')) return splitStreamIds(value as string[]);
  throw invalid('streamIds must be a comma-separated string or an array of strings', command);
}

function subscribeLastPosts(value: unknown, command: CommandName): number {
  if (value === undefined) return 0;
  const n = typeof value === 'string' && nonNegativeIntegerString.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_LAST_POSTS) {
    throw invalid(LAST_POSTS_RANGE, command);
  }
  return n;
}

function argsObject(data: unknown, command: CommandName): Record<string, unknown> {
  if (!isPlainObject(data)) throw invalid('data must be an object of arguments', command);
  return data;
}

/** An optional text field: absent or null is null; anything else must be a string passing `check`. */
function optionalText(
  value: unknown,
  name: string,
  check: (text: string) => string | undefined,
  command: CommandName,
): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalid(`${name} must be a string`, command, name);
  const problem = check(value);
  if (problem !== undefined) throw invalid(problem, command, name);
  return value;
}

const releaseAtProblem = (text: string) =>
  parseIsoDateTime(text) === undefined
    ? 'releaseAt must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T09:30:00Z'
    : undefined;
const customTargetProblem = (text: string) => (text === '' ? 'customTarget must not be empty' : undefined);
const idempotencyKeyProblem = (text: string) =>
  text === '' || text.length > MAX_IDEMPOTENCY_KEY_LENGTH ? IDEMPOTENCY_KEY_LENGTH : undefined;

export function parseSubscribeArgs(data: unknown, command: CommandName): SubscribeArgs {
  const args = argsObject(data, command);
  const streamIds = subscribeStreamIds(args['streamIds'], command);
  return { streamIds, lastPosts: subscribeLastPosts(args['lastPosts'], command) };
}

export function parsePublishArgs(data: unknown): PublishArgs {
  const command = PUBLISH_COMMAND;
  const args = argsObject(data, command);
  const { streamId, content, contentType } = args;
  if (typeof streamId !== 'string') throw invalid('streamId is required and must be a string', command, 'streamId');
  if (!STREAM_ID_PATTERN.test(streamId)) {
    throw invalid('streamId must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"', command, 'streamId');
  }
  if (typeof content !== 'string') throw invalid('content is required and must be a string', command, 'content');
  if (content === '') throw invalid('content must not be empty', command, 'content');
  // A UTF-8 byte is at most one UTF-16 unit and a unit at most 3 bytes: count only when it could matter.
  if (content.length * 3 > MAX_CONTENT_BYTES && Buffer.byteLength(content, 'utf8') > MAX_CONTENT_BYTES) {
    throw invalid(`content must be at most ${MAX_CONTENT_BYTES} bytes as UTF-8`, command, 'content');
  }
  // Omitted → rawtext (PROTOCOL.md B4): public publishers send none and read their posts back as plain text.
  let type: ContentType = DEFAULT_CONTENT_TYPE;
  if (contentType !== undefined && contentType !== null) {
    if (!(CONTENT_TYPES as readonly unknown[]).includes(contentType)) {
      throw invalid('contentType must be "rawtext" or "markdown"', command, 'contentType');
    }
    type = contentType as ContentType;
  }
  return {
    streamId,
    content,
    contentType: type,
    releaseAt: optionalText(args['releaseAt'], 'releaseAt', releaseAtProblem, command),
    customTarget: optionalText(args['customTarget'], 'customTarget', customTargetProblem, command),
    idempotencyKey: optionalText(args['idempotencyKey'], 'idempotencyKey', idempotencyKeyProblem, command),
  };
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
export function queryToArgs(params: Iterable<[string, string]>): Record<string, string> {
  const args: Record<string, string> = {};
  for (const [name, value] of params) {
    if (name === API_KEY_QUERY || name === HELLO_QUERY) continue;
    args[name] = value;
  }
  return args;
}
