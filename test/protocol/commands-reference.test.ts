import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { parseCommandArgs } from '../../src/protocol/commands.js';
import { parseIsoDateTime } from '../../src/protocol/dates.js';
import { ProtocolError } from '../../src/protocol/errors.js';
import { CONTENT_TYPES, type CommandName } from '../../src/protocol/types.js';

// The commands' arguments are checked by hand on the hot path. This file states the same
// rules as a zod schema, written apart from that code, and asks both the same questions:
// thousands of generated argument objects, near and far from valid, must get the same
// parsed value or the same message from each.

const LAST = { error: 'lastPosts must be an integer from 0 to 100' };
const KEY = { error: 'idempotencyKey must be 1-256 characters' };
const split = (ids: string | string[]) => [
  ...new Set((typeof ids === 'string' ? ids.split(',') : ids).map((id) => id.trim()).filter((id) => id !== '')),
];
const orNull = <T>(schema: z.ZodMiniType<T>) =>
  z.pipe(
    z.nullish(schema),
    z.transform((value: T | null | undefined) => value ?? null),
  );

const subscribe = z.object({
  streamIds: z.pipe(
    z.optional(
      z.union([z.string(), z.array(z.string())], {
        error: 'streamIds must be a comma-separated string or an array of strings',
      }),
    ),
    z.transform((ids: string | string[] | undefined) => (ids === undefined ? [] : split(ids))),
  ),
  lastPosts: z.pipe(
    z.optional(
      z.pipe(
        z.union([z.number(), z.pipe(z.string().check(z.regex(/^\s*\d+\s*$/)), z.transform(Number))], LAST),
        z.int(LAST).check(z.gte(0, LAST), z.lte(100, LAST)),
      ),
    ),
    z.transform((n: number | undefined) => n ?? 0),
  ),
});

const publish = z.object({
  streamId: z
    .string({ error: 'streamId is required and must be a string' })
    .check(
      z.regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'streamId must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"' }),
    ),
  content: z.string({ error: 'content is required and must be a string' }).check(
    z.minLength(1, { error: 'content must not be empty' }),
    z.refine((text: string) => Buffer.byteLength(text, 'utf8') <= 65536, {
      error: 'content must be at most 65536 bytes as UTF-8',
    }),
  ),
  contentType: z.pipe(
    z.nullish(z.enum(CONTENT_TYPES, { error: 'contentType must be "rawtext" or "markdown"' })),
    z.transform((type: 'rawtext' | 'markdown' | null | undefined) => type ?? 'rawtext'),
  ),
  releaseAt: orNull(
    z.string({ error: 'releaseAt must be a string' }).check(
      z.refine((text: string) => parseIsoDateTime(text) !== undefined, {
        error: 'releaseAt must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T09:30:00Z',
      }),
    ),
  ),
  customTarget: orNull(
    z
      .string({ error: 'customTarget must be a string' })
      .check(z.minLength(1, { error: 'customTarget must not be empty' })),
  ),
  idempotencyKey: orNull(
    z.string({ error: 'idempotencyKey must be a string' }).check(z.minLength(1, KEY), z.maxLength(256, KEY)),
  ),
});

type Outcome = { ok: true; data: unknown } | { ok: false; message: string };

function byHand(event: CommandName, data: Record<string, unknown>): Outcome {
  try {
    return { ok: true, data: parseCommandArgs(event, data).data };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    expect(error.code).toBe('invalid-argument');
    return { ok: false, message: error.message };
  }
}

function byReference(schema: z.ZodMiniType, data: Record<string, unknown>): Outcome {
  const result = schema.safeParse(data);
  return result.success ? { ok: true, data: result.data } : { ok: false, message: result.error.issues[0]!.message };
}

/** Values any field may meet: wrong types, edge lengths and forms, and valid ones. */
const anyValue = fc.oneof(
  fc.constantFrom(undefined, null, true, 0, -1, 1.5, 100, 101, Number.NaN, Infinity, '', ' ', [], {}, [1], ['a', 1]),
  fc.string({ maxLength: 12 }),
  fc.array(fc.string({ maxLength: 6 }), { maxLength: 4 }),
  fc.integer({ min: -5, max: 120 }),
  fc.integer({ min: -5, max: 120 }).map((n) => ` ${n} `),
  fc.constantFrom('a'.repeat(65), 'A'.repeat(64), 'a/b', 'x_Y-9', 'k'.repeat(256), 'k'.repeat(257)),
  fc.constantFrom(
    'a'.repeat(65536),
    'a'.repeat(65537),
    '€'.repeat(21845) + 'a',
    '€'.repeat(21845) + 'é',
    '🚀'.repeat(16385),
  ),
  fc.constantFrom('rawtext', 'markdown', 'Markdown', 'html'),
  fc.constantFrom(
    '2026-12-01T10:00:00Z',
    '2026-12-01T10:00:00+02:00',
    '2026-12-01T10:00:00',
    '2026-02-30T10:00:00Z',
    'soon',
  ),
);

const fieldsOf = (names: string[]) =>
  fc.record(Object.fromEntries([...names, 'extra'].map((name) => [name, anyValue])), { requiredKeys: [] });

describe('hand-checked command arguments against a reference schema', () => {
  it('subscribe: the same value or the same message for every generated object', () => {
    fc.assert(
      fc.property(fieldsOf(['streamIds', 'lastPosts']), (data) => {
        expect(byHand('on-stream-post', data)).toEqual(byReference(subscribe, data));
      }),
      { numRuns: 5000 },
    );
  });

  it('publish: the same value or the same message for every generated object', () => {
    const valid = fc.record({
      streamId: fc.constantFrom('macro-wire', 'x'),
      content: fc.constantFrom('hello', 'é'),
    });
    const fields = fieldsOf(['streamId', 'content', 'contentType', 'releaseAt', 'customTarget', 'idempotencyKey']);
    // Half of the objects start from valid fields, so the later fields' checks are reached too.
    const data = fc.oneof(
      fields,
      fc.tuple(valid, fields).map(([base, change]) => {
        const merged: Record<string, unknown> = { ...base };
        for (const [name, value] of Object.entries(change))
          if (name !== 'streamId' && name !== 'content') merged[name] = value;
        return merged;
      }),
    );
    fc.assert(
      fc.property(data, (args) => {
        expect(byHand('add-stream-post', args)).toEqual(byReference(publish, args));
      }),
      { numRuns: 5000 },
    );
  });
});
