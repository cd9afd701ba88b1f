import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import type { Seed } from '../../protocol/seed.js';
import { CONTENT_TYPES, DEFAULT_STREAM_CATEGORY, PRICING_TYPES, STREAM_STATES } from '../../protocol/types.js';
import { MAX_CONTENT_BYTES, STREAM_ID_PATTERN } from '../../protocol/limits.js';
import { DocumentError } from '../document-error.js';

// zod's English messages, so a seed error reads "expected string, received number";
// given per parse, because z.config() would change zod for everyone who imports us.
const englishMessages = en().localeError;

const idSchema = z
  .string()
  .check(z.regex(STREAM_ID_PATTERN, { error: 'must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"' }));
const keySchema = z.string().check(z.minLength(8, { error: 'must be at least 8 characters' }), z.maxLength(256));
const nonEmpty = () => z.string().check(z.minLength(1));

const userSchema = z.strictObject({
  id: idSchema,
  name: nonEmpty(),
  readerKey: keySchema,
  follows: z._default(z.array(idSchema), []),
  customTargets: z._default(z.record(idSchema, z.array(nonEmpty())), {}),
});

const jsonObject = () => z._default(z.record(z.string(), z.unknown()), {});

const streamSchema = z.strictObject({
  id: idSchema,
  name: nonEmpty(),
  owner: idSchema,
  key: keySchema,
  custom: z._default(z.boolean(), false),
  customTargets: z._default(z.array(nonEmpty()), []),
  // What the hosted service's stream directory shows (PROTOCOL.md B6), for GET /v1/streams.
  description: z._default(z.string(), ''),
  label: z._default(z.string(), ''),
  isFeatured: z._default(z.boolean(), false),
  packageOnly: z._default(z.boolean(), false),
  category: z._default(z.string().check(z.minLength(1), z.maxLength(64)), DEFAULT_STREAM_CATEGORY),
  state: z._default(z.enum(STREAM_STATES), 'ACTIVE'),
  pricingType: z._default(z.enum(PRICING_TYPES), 'FREE'),
  // Left out: how many of the seed's users follow the stream (filled in by parseSeed).
  followers: z.optional(z.int().check(z.gte(0))),
  public: z._default(z.boolean(), true),
  customTargetsData: jsonObject(),
  paidStreamData: jsonObject(),
  createdAt: z.optional(z.iso.datetime({ offset: true })),
});

const seedPostSchema = z.strictObject({
  streamId: idSchema,
  content: z.string().check(
    z.minLength(1),
    z.refine((text: string) => Buffer.byteLength(text, 'utf8') <= MAX_CONTENT_BYTES, {
      error: `must be at most ${MAX_CONTENT_BYTES} bytes`,
    }),
  ),
  contentType: z.enum(CONTENT_TYPES),
  createdAt: z.optional(z.iso.datetime({ offset: true })),
  customTarget: z.optional(nonEmpty()),
});

export const seedSchema = z.strictObject({
  users: z.array(userSchema).check(z.minLength(1)),
  streams: z._default(z.array(streamSchema), []),
  posts: z._default(z.array(seedPostSchema), []),
});

export type { Seed };
type ParsedSeed = z.output<typeof seedSchema>;
// The protocol's hand-written Seed is what the rest of the code reads; this keeps the two in step
// (a parsed seed only lacks the follower counts that parseSeed fills in).
const schemaKeepsToSeed: (seed: ParsedSeed) => Omit<Seed, 'streams'> & {
  streams: (Omit<Seed['streams'][number], 'followers'> & { followers?: number | undefined })[];
} = (seed) => seed;
const seedFitsSchema: (seed: Seed) => ParsedSeed = (seed) => seed;
void schemaKeepsToSeed;
void seedFitsSchema;
export type SeedInput = z.input<typeof seedSchema>;

/** A seed that cannot be used: `path` names the field. */
export class SeedError extends DocumentError {
  constructor(path: string, detail: string, options?: { cause?: unknown }) {
    super('invalid-seed', path, detail, options);
  }

  get path(): string {
    return this.where;
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) => (typeof part === 'number' ? `${text}[${part}]` : `${text}.${String(part)}`),
    'seed',
  );
}

/** Checks that every reference in the seed points at something that exists. */
function checkReferences(seed: ParsedSeed): void {
  const users = new Map(seed.users.map((user) => [user.id, user]));
  const streams = new Map(seed.streams.map((stream) => [stream.id, stream]));
  const seenKeys = new Map<string, string>();
  const claimKey = (key: string, path: string) => {
    const other = seenKeys.get(key);
    // Never echo the key itself: name where it was seen instead.
    if (other !== undefined) throw new SeedError(path, `repeats the key already used at ${other}`);
    seenKeys.set(key, path);
  };
  const seenIds = new Set<string>();
  seed.users.forEach((user, i) => {
    if (seenIds.has(user.id)) throw new SeedError(`seed.users[${i}].id`, `duplicate user id "${user.id}"`);
    seenIds.add(user.id);
    claimKey(user.readerKey, `seed.users[${i}].readerKey`);
  });
  seenIds.clear();
  seed.streams.forEach((stream, i) => {
    const at = `seed.streams[${i}]`;
    if (seenIds.has(stream.id)) throw new SeedError(`${at}.id`, `duplicate stream id "${stream.id}"`);
    seenIds.add(stream.id);
    if (!users.has(stream.owner)) throw new SeedError(`${at}.owner`, `unknown user "${stream.owner}"`);
    claimKey(stream.key, `${at}.key`);
    if (stream.custom && stream.customTargets.length === 0) {
      throw new SeedError(`${at}.customTargets`, 'a custom stream must offer at least one target');
    }
    if (!stream.custom && stream.customTargets.length > 0) {
      throw new SeedError(`${at}.customTargets`, 'only a custom stream ("custom": true) offers targets');
    }
  });
  seed.users.forEach((user, i) => {
    user.follows.forEach((streamId, j) => {
      if (!streams.has(streamId)) throw new SeedError(`seed.users[${i}].follows[${j}]`, `unknown stream "${streamId}"`);
    });
    for (const [streamId, targets] of Object.entries(user.customTargets)) {
      const at = `seed.users[${i}].customTargets.${streamId}`;
      const stream = streams.get(streamId);
      if (!stream) throw new SeedError(at, `unknown stream "${streamId}"`);
      if (!stream.custom) throw new SeedError(at, `stream "${streamId}" is not a custom stream`);
      const unknown = targets.find((target) => !stream.customTargets.includes(target));
      if (unknown !== undefined) throw new SeedError(at, `stream "${streamId}" offers no target "${unknown}"`);
    }
  });
  seed.posts.forEach((post, i) => {
    const at = `seed.posts[${i}]`;
    const stream = streams.get(post.streamId);
    if (!stream) throw new SeedError(`${at}.streamId`, `unknown stream "${post.streamId}"`);
    if (stream.custom && post.customTarget === undefined) {
      throw new SeedError(`${at}.customTarget`, `required on custom stream "${stream.id}"`);
    }
    if (!stream.custom && post.customTarget !== undefined) {
      throw new SeedError(`${at}.customTarget`, `stream "${stream.id}" is not a custom stream`);
    }
    if (post.customTarget !== undefined && !stream.customTargets.includes(post.customTarget)) {
      throw new SeedError(`${at}.customTarget`, `stream "${stream.id}" offers no target "${post.customTarget}"`);
    }
  });
}

/** Validates a parsed seed document; throws SeedError naming the field path. */
export function parseSeed(document: unknown): Seed {
  const result = seedSchema.safeParse(document, { error: englishMessages });
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new SeedError(formatPath(issue?.path ?? []), issue?.message ?? 'invalid seed');
  }
  checkReferences(result.data);
  const followers = new Map<string, number>();
  for (const user of result.data.users) {
    for (const id of new Set(user.follows)) followers.set(id, (followers.get(id) ?? 0) + 1);
  }
  return {
    ...result.data,
    streams: result.data.streams.map((stream) => ({
      ...stream,
      followers: stream.followers ?? followers.get(stream.id) ?? 0,
    })),
  };
}

/** Parses seed JSON text; `source` names the file in errors. */
export function parseSeedText(text: string): Seed {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new SeedError('seed', `not valid JSON (${(error as Error).message})`, { cause: error });
  }
  return parseSeed(document);
}
