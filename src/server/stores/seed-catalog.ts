import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import { ProtocolError } from '../../protocol/errors.js';
import { PUBLISH_COMMAND } from '../../protocol/types.js';
import type { Seed } from '../seed.js';
import type { PostRecord, StreamRecord, UserRecord } from '../store.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * What tells two seeds apart, keys digested first (a keyspace or a state file holds no key):
 * a Redis keyspace and a state file are each tied to the seed they were made with.
 */
export function seedDigest(seed: Seed): string {
  return sha256(
    JSON.stringify({
      users: seed.users.map((user) => ({ ...user, readerKey: sha256(user.readerKey) })),
      streams: seed.streams.map((stream) => ({ ...stream, key: sha256(stream.key) })),
      posts: seed.posts,
    }),
  );
}

/** Per-stream caps every store enforces (PROTOCOL.md B4); 0 or undefined = no cap. */
export interface HoldingsCaps {
  maxPendingReleasesPerStream?: number;
  maxPendingReleaseBytesPerStream?: number;
  maxIdempotencyKeysPerStream?: number;
  /** Text bytes of the posts those keys hold on to (a key keeps its post for its duplicate's ack). */
  maxIdempotencyBytesPerStream?: number;
}

const SEED_POST_SPACING_MS = 60_000;

/** The seed's users and streams as the stores serve them. */
export function seedCatalog(seed: Seed): { users: Map<string, UserRecord>; streams: Map<string, StreamRecord> } {
  const users = new Map<string, UserRecord>();
  for (const user of seed.users) {
    users.set(user.id, {
      id: user.id,
      name: user.name,
      follows: user.follows,
      customTargets: new Map(Object.entries(user.customTargets).map(([id, targets]) => [id, new Set(targets)])),
    });
  }
  const streams = new Map<string, StreamRecord>();
  for (const stream of seed.streams) {
    streams.set(stream.id, {
      id: stream.id,
      name: stream.name,
      owner: stream.owner,
      custom: stream.custom,
      customTargets: stream.customTargets,
    });
  }
  return { users, streams };
}

/** The seed's users and streams, as both stores serve them (they change only with the seed). */
export class Catalog {
  readonly users: Map<string, UserRecord>;
  readonly streams: Map<string, StreamRecord>;
  readonly #streamsOf = new Map<string, StreamRecord[]>();

  constructor(seed: Seed) {
    ({ users: this.users, streams: this.streams } = seedCatalog(seed));
  }

  /** Streams a user follows or owns, in seed order. */
  streamsOf(userId: string): StreamRecord[] {
    let streams = this.#streamsOf.get(userId);
    if (!streams) {
      const user = this.users.get(userId);
      if (!user) return [];
      // One scan per user, not one per connection.
      const follows = new Set(user.follows);
      streams = [...this.streams.values()].filter((stream) => follows.has(stream.id) || stream.owner === userId);
      this.#streamsOf.set(userId, streams);
    }
    return [...streams];
  }
}

/**
 * A seed post's id: the same on every start and after every reset, so a client that
 * already showed the post recognises it in a replay from a restarted service. A ULID
 * whose time is the post's place in the seed's order (seed posts sort before every
 * post published later) and whose randomness is a digest of the post as the seed gives
 * it: editing one post in place changes that post's id only.
 */
function seedPostId(post: Seed['posts'][number], seedIndex: number, position: number): string {
  const digest = createHash('sha256')
    .update(
      JSON.stringify([seedIndex, post.streamId, post.content, post.contentType, post.customTarget, post.createdAt]),
    )
    .digest();
  let at = 0;
  return ulid(position + 1, () => digest[at++]! / 256);
}

/** The seed's posts, oldest first: undated ones a minute apart, ending a minute before `now`. */
export function seedPosts(seed: Seed, now: number): PostRecord[] {
  const byId = new Map(seed.streams.map((stream) => [stream.id, stream]));
  return seed.posts
    .map((post, index) => ({
      post,
      index,
      at:
        post.createdAt === undefined
          ? now - (seed.posts.length - index) * SEED_POST_SPACING_MS
          : Date.parse(post.createdAt),
    }))
    .sort((a, b) => a.at - b.at)
    .map(({ post, index, at }, position) => ({
      id: seedPostId(post, index, position),
      streamId: post.streamId,
      streamName: byId.get(post.streamId)!.name,
      text: post.content,
      contentType: post.contentType,
      createdAt: at,
      releaseAt: null,
      customTarget: post.customTarget ?? null,
      hidden: false,
    }));
}

export type HoldingKind = 'releases' | 'releases-bytes' | 'keys' | 'keys-bytes';

/** The refusal of a post that would take a stream past one of its caps. */
export function holdingsError(kind: HoldingKind, streamId: string, max: number): ProtocolError {
  const messages: Record<HoldingKind, string> = {
    releases: `stream "${streamId}" already has ${max} posts waiting for their releaseAt, the most the server allows`,
    'releases-bytes': `the posts of stream "${streamId}" waiting for their releaseAt would exceed ${max} bytes, the most the server allows`,
    keys: `stream "${streamId}" already has ${max} idempotency keys within the window, the most the server allows; retry later`,
    'keys-bytes': `the posts held for stream "${streamId}"'s idempotency keys would exceed ${max} bytes, the most the server allows; retry later`,
  };
  return new ProtocolError('limit-exceeded', messages[kind], PUBLISH_COMMAND);
}

/**
 * What both stores answer from the seed they were built with (users and streams never change
 * while serving): the one place those reads live.
 */
export abstract class SeedReads {
  protected readonly catalog: Catalog;

  constructor(seed: Seed) {
    this.catalog = new Catalog(seed);
  }

  async user(id: string): Promise<UserRecord | undefined> {
    return this.catalog.users.get(id);
  }

  async stream(id: string): Promise<StreamRecord | undefined> {
    return this.catalog.streams.get(id);
  }

  async streamsOf(userId: string): Promise<StreamRecord[]> {
    return this.catalog.streamsOf(userId);
  }
}
