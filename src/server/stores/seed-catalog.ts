import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import type { Seed } from '../../protocol/seed.js';
import { follows } from './follows.js';
import type { PostRecord, StreamRecord, TargetSelections, UserRecord } from './store.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * What tells two seeds apart, keys digested first (a keyspace or a state file holds no key):
 * a Redis keyspace and a state file are each tied to the seed they were made with. A
 * stream's directory fields (description, category, followers, …) are left out: no stored
 * state depends on them, so editing them keeps a state file and a keyspace usable.
 */
export function seedDigest(seed: Seed): string {
  // Computed once per seed object: instances started from one seed (tests, --workers) share it.
  let digest = digests.get(seed);
  if (digest === undefined) {
    digest = digestOf(seed);
    digests.set(seed, digest);
  }
  return digest;
}

const digests = new WeakMap<Seed, string>();

/**
 * The SHA-256 of `JSON.stringify({ users, streams, posts })`, its posts hashed one by one:
 * the same bytes as one string, without building a string as large as the seed's posts.
 */
function digestOf(seed: Seed): string {
  const head = JSON.stringify({
    users: seed.users.map((user) => ({ ...user, readerKey: sha256(user.readerKey) })),
    streams: seed.streams.map(({ id, name, owner, key, custom, customTargets }) => ({
      id,
      name,
      owner,
      key: sha256(key),
      custom,
      customTargets,
    })),
  });
  const hash = createHash('sha256').update(`${head.slice(0, -1)},"posts":[`, 'utf8');
  seed.posts.forEach((post, index) => hash.update(index === 0 ? JSON.stringify(post) : `,${JSON.stringify(post)}`));
  return hash.update(']}').digest('hex');
}

const SEED_POST_SPACING_MS = 60_000;

type Selections = Map<string, Set<string>>;

function seedSelections(user: Seed['users'][number]): [string, Set<string>][] {
  return Object.entries(user.customTargets).map(([id, targets]) => [id, new Set(targets)]);
}

/** The seed's users and streams as the stores serve them. */
export function seedCatalog(seed: Seed): { users: Map<string, UserRecord>; streams: Map<string, StreamRecord> } {
  const users = new Map<string, UserRecord>();
  for (const user of seed.users) {
    users.set(user.id, {
      id: user.id,
      name: user.name,
      follows: user.follows,
      customTargets: new Map(seedSelections(user)),
    });
  }
  const streams = new Map<string, StreamRecord>();
  for (const { key: _key, createdAt, ...stream } of seed.streams) {
    streams.set(stream.id, { ...stream, createdAt: createdAt === undefined ? null : Date.parse(createdAt) });
  }
  return { users, streams };
}

/**
 * The seed's users and streams, as both stores serve them. Only the users' selected targets
 * change while serving, and they change in place: subscriptions hold the user's record.
 */
export class Catalog {
  readonly users: Map<string, UserRecord>;
  readonly streams: Map<string, StreamRecord>;
  readonly #seed: Seed;
  readonly #selections = new Map<string, Selections>();
  readonly #streamsOf = new Map<string, StreamRecord[]>();

  constructor(seed: Seed) {
    this.#seed = seed;
    ({ users: this.users, streams: this.streams } = seedCatalog(seed));
    // The same maps the records hold, kept writable here.
    for (const user of this.users.values()) this.#selections.set(user.id, user.customTargets as Selections);
  }

  /** Streams a user follows or owns, in seed order. */
  streamsOf(userId: string): StreamRecord[] {
    let streams = this.#streamsOf.get(userId);
    if (!streams) {
      const user = this.users.get(userId);
      if (!user) return [];
      // One scan per user, not one per connection.
      streams = [...this.streams.values()].filter((stream) => follows(user, stream));
      this.#streamsOf.set(userId, streams);
    }
    return [...streams];
  }

  setCustomTargets(userId: string, streamId: string, targets: readonly string[]): void {
    this.#selections.get(userId)?.set(streamId, new Set(targets));
  }

  /** Every user's selection, as data (a snapshot, a state file). */
  selections(): TargetSelections {
    const all: TargetSelections = {};
    for (const [userId, selections] of this.#selections) {
      all[userId] = Object.fromEntries([...selections].map(([streamId, targets]) => [streamId, [...targets]]));
    }
    return all;
  }

  /** Back to the seed's selections, then `changes` (user → stream → targets) over them. */
  resetSelections(changes: TargetSelections = {}): void {
    for (const user of this.#seed.users) {
      const selections = this.#selections.get(user.id)!;
      selections.clear();
      for (const [streamId, targets] of seedSelections(user)) selections.set(streamId, targets);
    }
    for (const [userId, streams] of Object.entries(changes)) {
      for (const [streamId, targets] of Object.entries(streams)) this.setCustomTargets(userId, streamId, targets);
    }
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

/**
 * What both stores answer from the seed they were built with (users and streams never change
 * while serving, but for the users' selected targets): the one place those reads live.
 */
export abstract class SeedReads {
  protected readonly catalog: Catalog;

  constructor(seed: Seed) {
    this.catalog = new Catalog(seed);
  }

  user(id: string): UserRecord | undefined {
    return this.catalog.users.get(id);
  }

  stream(id: string): StreamRecord | undefined {
    return this.catalog.streams.get(id);
  }

  streamsOf(userId: string): StreamRecord[] {
    return this.catalog.streamsOf(userId);
  }

  streams(): StreamRecord[] {
    return [...this.catalog.streams.values()];
  }
}
