// A recording as `serve --replay` reads it: the document checked whole before anything is
// served, so a hand-edited or hostile file is refused at start-up with the place named, never
// half-replayed.
import { readFile } from 'node:fs/promises';
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { parseIsoDateTime } from '../../protocol/dates.js';
import {
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type RecordedConnection,
  type Recording,
} from '../../protocol/recording.js';
import { DocumentError } from '../document-error.js';

const englishMessages = en().localeError;

/**
 * Deeper than any frame of the protocol nests; the matching and shifting walk values
 * recursively, so a hostile file must not be able to take the stack.
 */
export const MAX_JSON_DEPTH = 64;

/** Why a recording cannot be replayed: `where` names the place in it; nothing was served. */
export class RecordingError extends DocumentError {
  constructor(where: string, detail: string, options?: { cause?: unknown }) {
    super('invalid-recording', where, detail, options);
  }
}

const offset = z.number().check(z.gte(0), z.refine(Number.isFinite, 'expected a finite number of milliseconds'));
const isoTime = z
  .string()
  .check(z.refine((text: string) => parseIsoDateTime(text) !== undefined, 'expected an ISO 8601 date-time'));
const base64 = z.string().check(z.regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected base64'));
// Headers are sent again as they are: a name or value that could end a header line is refused here.
const headers = z.record(
  z.string().check(z.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'expected an HTTP header name')),
  z.string().check(z.regex(/^[^\r\n\0]*$/, 'expected a header value without line breaks')),
);
const body = z.union([
  z.strictObject({ json: z.json() }),
  z.strictObject({ text: z.string() }),
  z.strictObject({ base64 }),
]);
const head = {
  path: z.string().check(z.regex(/^\//, 'expected a path starting with /')),
  query: z.array(z.tuple([z.string(), z.string()])),
  headers,
};
const side = z.enum(['client', 'server']);
const event = z.union([
  z.strictObject({ t: offset, from: side, op: z.literal('text'), json: z.json() }),
  z.strictObject({ t: offset, from: side, op: z.literal('text'), text: z.string() }),
  z.strictObject({ t: offset, from: side, op: z.literal('binary'), base64 }),
  z.strictObject({ t: offset, from: side, op: z.enum(['ping', 'pong']), data: z.optional(z.string()) }),
  z.strictObject({
    t: offset,
    from: side,
    op: z.literal('close'),
    code: z.int().check(z.gte(1000), z.lte(4999)),
    reason: z.string(),
  }),
]);
const documentSchema = z.strictObject({
  meta: z.strictObject({
    format: z.literal(RECORDING_FORMAT),
    version: z.literal(RECORDING_VERSION),
    recordedAt: isoTime,
    upstream: z.string(),
    tool: z.strictObject({ name: z.literal('stream-posts'), version: z.string() }),
    dialect: z.enum(['hosted', 'stream-posts', 'unknown']),
    redactions: z.array(
      z.strictObject({
        kind: z.enum(['api-key', 'upload-url', 'admin-token', 'field']),
        placeholder: z.string(),
        count: z.int().check(z.gte(0)),
        path: z.optional(z.string()),
      }),
    ),
    truncated: z.boolean(),
  }),
  connections: z.array(
    z.strictObject({
      id: z.int().check(z.gte(1)),
      at: offset,
      transport: z.enum(['ws', 'url-form', 'tree', 'graphql']),
      request: z.strictObject(head),
      subprotocol: z.optional(z.string()),
      refused: z.optional(
        z.strictObject({ status: z.int().check(z.gte(100), z.lte(599)), headers, body: z.optional(body) }),
      ),
      events: z.array(event),
    }),
  ),
  requests: z.array(
    z.strictObject({
      id: z.int().check(z.gte(1)),
      at: offset,
      method: z.string().check(z.regex(/^[A-Z]+$/, 'expected an HTTP method in capitals')),
      request: z.strictObject({ ...head, body: z.optional(body) }),
      response: z.strictObject({
        t: offset,
        status: z.int().check(z.gte(100), z.lte(599)),
        headers,
        body: z.optional(body),
      }),
    }),
  ),
});

function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) =>
      typeof part === 'number' ? `${text}[${part}]` : text === '' ? String(part) : `${text}.${String(part)}`,
    '',
  );
}

/** The first place a value nests deeper than MAX_JSON_DEPTH, or undefined; iterative, so it cannot overflow itself. */
function tooDeep(value: unknown): string | undefined {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: '' }];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.depth > MAX_JSON_DEPTH) return next.path;
    for (const [key, child] of Object.entries(next.value)) {
      const path = Array.isArray(next.value) ? `${next.path}[${key}]` : next.path === '' ? key : `${next.path}.${key}`;
      stack.push({ value: child, depth: next.depth + 1, path });
    }
  }
  return undefined;
}

/** What the schema cannot say: ids unique, and each connection's events in time order. */
function checkOrder(recording: Recording, fail: (path: string, detail: string) => never): void {
  for (const what of ['connections', 'requests'] as const) {
    const seen = new Set<number>();
    recording[what].forEach(({ id }, i) => {
      if (seen.has(id)) fail(`${what}[${i}].id`, `${id} is the id of an earlier one too`);
      seen.add(id);
    });
  }
  recording.connections.forEach((connection: RecordedConnection, i) => {
    if (connection.refused && connection.events.length > 0)
      fail(`connections[${i}].events`, 'a refused upgrade has no events');
    connection.events.forEach((event, j) => {
      const before = connection.events[j - 1];
      if (before && event.t < before.t)
        fail(`connections[${i}].events[${j}].t`, `${event.t} is earlier than the event before it (${before.t})`);
    });
  });
}

/** A parsed recording checked whole; a RecordingError names `source` and the first bad place. */
export function parseRecording(value: unknown, source = 'the recording'): Recording {
  const fail = (path: string, detail: string): never => {
    throw new RecordingError(path === '' ? source : `${source} at ${path}`, detail);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    fail('', 'a recording is a JSON object with meta, connections and requests');
  const meta = (value as { meta?: { format?: unknown; version?: unknown } }).meta;
  if (meta?.format !== RECORDING_FORMAT)
    fail(
      'meta.format',
      `is ${JSON.stringify(meta?.format)}, not "${RECORDING_FORMAT}": not a file serve --record wrote`,
    );
  if (meta!.version !== RECORDING_VERSION)
    fail('meta.version', `is ${JSON.stringify(meta!.version)}; this stream-posts reads version ${RECORDING_VERSION}`);
  const deep = tooDeep(value);
  if (deep !== undefined) fail(deep, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  const result = documentSchema.safeParse(value, { error: englishMessages });
  if (!result.success) {
    const issue = result.error.issues[0];
    fail(pathOf(issue?.path ?? []), issue?.message ?? 'invalid');
  }
  const recording = result.data as Recording;
  checkOrder(recording, fail);
  return recording;
}

/** Reads and checks a recording file; every failure is a RecordingError naming the file. */
export async function readRecording(file: string): Promise<Recording> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new RecordingError(file, `cannot be read (${reason})`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RecordingError(file, `is not JSON (${(error as Error).message})`, { cause: error });
  }
  return parseRecording(value, file);
}
