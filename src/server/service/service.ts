// service/: the rules of the service, whatever the store: who may read and publish what, hidden
// posts and their releases, the adjustable clock, the seed and its defaults.
import { parseIsoDateTime } from '../../protocol/dates.js';
import { ProtocolError } from '../../protocol/errors.js';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import { PUBLISH_COMMAND, type PublishArgs } from '../../protocol/types.js';
import type {
  Awaitable,
  Identity,
  KeyCatalog,
  PostLog,
  PostRecord,
  PublishResult,
  SharedStore,
  StreamRecord,
  UserRecord,
} from '../stores/store.js';
import { isPending, isShared } from '../stores/store.js';
import { canSee, follows, readerOf, type Reader } from './visibility.js';

/** The streams a subscription resolved to, with what the user may see of each. */
export interface ResolvedSubscription {
  user: UserRecord;
  streams: StreamRecord[];
}

const MAX_IDS_NAMED = 10;

/** When a checked publish's post is released (epoch ms), null when it names no time. */
export function releaseTime(args: Pick<PublishArgs, 'releaseAt'>): number | null {
  return args.releaseAt === null ? null : (parseIsoDateTime(args.releaseAt) ?? null);
}

function nameIds(ids: readonly string[]): string {
  const named = ids
    .slice(0, MAX_IDS_NAMED)
    .map((id) => `"${id.slice(0, 64)}"`)
    .join(', ');
  return ids.length > MAX_IDS_NAMED ? `${named} and ${ids.length - MAX_IDS_NAMED} more` : named;
}

/**
 * The service's rules (PROTOCOL.md B1, B4) over a store's keys, catalog and posts, shared by the
 * WebSocket, GraphQL and REST surfaces so all answer the same way. The store is its own:
 * the surfaces ask the service, never the store.
 */
export class StreamPostsService {
  readonly #store: KeyCatalog & PostLog;
  /** A shared store, once: the memory store has nothing to catch up with and no feed position. */
  readonly #shared: SharedStore | undefined;

  constructor(store: KeyCatalog & PostLog) {
    this.#store = store;
    this.#shared = isShared(store) ? store : undefined;
  }

  /** A stream of the seed, whoever asks (the caller decides what the asker may see of it). */
  stream(id: string): StreamRecord | undefined {
    return this.#store.stream(id);
  }

  /** Every stream, in seed order. */
  streams(): StreamRecord[] {
    return this.#store.streams();
  }

  /** The streams a user follows or owns, in seed order. */
  streamsOf(user: UserRecord): StreamRecord[] {
    return this.#store.streamsOf(user.id);
  }

  /** Replaces a user's selected targets on a custom stream (checked by the caller); delivery follows at once. */
  setCustomTargets(user: UserRecord, streamId: string, targets: readonly string[]): Promise<void> {
    return this.#store.setCustomTargets(user.id, streamId, targets);
  }

  /**
   * On a shared store, resolves once this instance has applied every change made anywhere
   * before the call; undefined (nothing to wait for) on the memory store.
   */
  caughtUp(): Promise<void> | undefined {
    return this.#shared?.caughtUp();
  }

  /** At once in memory (no key is no identity); a shared store's answer is a promise. */
  authenticate(key: string | undefined): Awaitable<Identity | undefined> {
    if (key === undefined || key === '') return undefined;
    return this.#store.authenticate(key);
  }

  userOf(identity: Identity): UserRecord {
    const user = this.#store.user(identity.userId);
    if (!user) throw new ProtocolError('internal', 'the user of this key no longer exists');
    return user;
  }

  /** Resolves `streamIds` (empty = all of the user's streams); all-or-nothing. */
  resolveStreams(identity: Identity, streamIds: readonly string[], command: string): ResolvedSubscription {
    const user = this.userOf(identity);
    if (streamIds.length === 0) return { user, streams: this.#store.streamsOf(user.id) };
    const missing: string[] = [];
    const notFollowed: string[] = [];
    const streams: StreamRecord[] = [];
    for (const id of streamIds) {
      const stream = this.#store.stream(id);
      if (!stream) missing.push(id);
      else if (follows(user, stream)) streams.push(stream);
      else notFollowed.push(id);
    }
    if (missing.length > 0) {
      const alsoNotFollowed = notFollowed.length > 0 ? `; not followed: ${nameIds(notFollowed)}` : '';
      throw new ProtocolError('not-found', `no stream with id ${nameIds(missing)}${alsoNotFollowed}`, command);
    }
    if (notFollowed.length > 0) {
      throw new ProtocolError(
        'forbidden',
        `this key's user does not follow or own stream ${nameIds(notFollowed)}`,
        command,
      );
    }
    return { user, streams };
  }

  /** `metadata`: the REST form's (PROTOCOL.md B6), stored and delivered with the post. */
  async publish(identity: Identity, args: PublishArgs, metadata?: Record<string, unknown>): Promise<PublishResult> {
    const stream = this.#store.stream(args.streamId);
    if (!stream) throw new ProtocolError('not-found', `no stream with id "${args.streamId}"`, PUBLISH_COMMAND);
    if (identity.kind !== 'stream' || identity.streamId !== stream.id) {
      const why = identity.kind === 'reader' ? 'a reader key cannot publish' : 'this key belongs to another stream';
      throw new ProtocolError('forbidden', `${why}; publish to "${stream.id}" with its stream key`, PUBLISH_COMMAND);
    }
    if (stream.custom) {
      if (args.customTarget === null) {
        throw new ProtocolError(
          'invalid-argument',
          `customTarget is required on custom stream "${stream.id}" (one of ${stream.customTargets.join(', ')})`,
          PUBLISH_COMMAND,
        );
      }
      if (!stream.customTargets.includes(args.customTarget)) {
        throw new ProtocolError(
          'invalid-argument',
          `customTarget must be one of ${stream.customTargets.join(', ')} on stream "${stream.id}"`,
          PUBLISH_COMMAND,
        );
      }
    } else if (args.customTarget !== null) {
      throw new ProtocolError(
        'invalid-argument',
        `customTarget is only allowed on custom streams; "${stream.id}" is not one`,
        PUBLISH_COMMAND,
      );
    }
    return this.#store.publish({
      streamId: stream.id,
      text: args.content,
      contentType: args.contentType,
      releaseAt: releaseTime(args),
      customTarget: args.customTarget,
      idempotencyKey: args.idempotencyKey,
      metadata,
    });
  }

  /**
   * Recent posts of the streams the user may see, oldest first, up to `perStream` each: at
   * once from memory, a promise from a shared store (whose streams are read together).
   */
  history(resolved: ResolvedSubscription, perStream: number): Awaitable<PostRecord[]> {
    if (perStream === 0) return [];
    // Taken in the same turn the subscription was registered: the history ends where its live posts begin.
    return this.#read(resolved, perStream, this.#shared?.position());
  }

  /**
   * All a stream's kept history the key may see (oldest first), and as whom it reads it: what
   * REST pages through. Unknown and unfollowed streams are refused as a subscription is.
   */
  async storedHistory(
    identity: Identity,
    streamId: string,
    command: string,
  ): Promise<{ posts: PostRecord[]; reader: Reader }> {
    const resolved = this.resolveStreams(identity, [streamId], command);
    return {
      posts: await this.#read(resolved, MAX_LAST_POSTS, undefined),
      reader: readerOf(identity, resolved.streams[0]!),
    };
  }

  #read(resolved: ResolvedSubscription, perStream: number, asOf: number | undefined): Awaitable<PostRecord[]> {
    // Only a custom stream filters by target, so only there must the whole history be read.
    const reads = resolved.streams.map((stream) =>
      this.#store.recent(stream.id, stream.custom ? MAX_LAST_POSTS : perStream, asOf),
    );
    return reads.some(isPending)
      ? Promise.all(reads).then((recent) => mergeHistory(resolved, recent, perStream))
      : mergeHistory(resolved, reads as PostRecord[][], perStream);
  }
}

/** Each stream's recent posts (in `resolved.streams` order) as one history: what the user may see, by id. */
function mergeHistory(resolved: ResolvedSubscription, recent: PostRecord[][], perStream: number): PostRecord[] {
  const all: PostRecord[] = [];
  resolved.streams.forEach((stream, i) => {
    const read = recent[i]!;
    const visible = stream.custom ? read.filter((post) => canSee(resolved.user, stream, post)) : read;
    all.push(...visible.slice(Math.max(visible.length - perStream, 0)));
  });
  // Ids are monotonic ULIDs, so id order is the order posts were stored; one stream's
  // history already is in it.
  return resolved.streams.length === 1 ? all : all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
