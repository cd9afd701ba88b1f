import type { Post } from '../../protocol/types.js';
import { storedPost, type Identity, type PostRecord, type StreamRecord, type UserRecord } from '../stores/store.js';

export { followedBy, follows } from '../stores/follows.js';

/**
 * Who reads a post: its stream's owner (any key of the user who owns the stream; the admin,
 * with the admin token, reads as the owner does), or anyone else.
 */
export type Reader = 'owner' | 'anyone';

/** Whether a user sees a post of a stream (PROTOCOL.md B1 custom-target rule). */
export function canSee(user: UserRecord, stream: StreamRecord, post: Pick<PostRecord, 'customTarget'>): boolean {
  if (!stream.custom || stream.owner === user.id) return true;
  if (post.customTarget === null) return false;
  return user.customTargets.get(stream.id)?.has(post.customTarget) ?? false;
}

/** The reader a key makes of a stream's posts; no key is anyone. */
export function readerOf(identity: Identity | undefined, stream: Pick<StreamRecord, 'owner'>): Reader {
  return identity !== undefined && identity.userId === stream.owner ? 'owner' : 'anyone';
}

/**
 * Whether content released at `releaseAt` is still kept from this reader at `now`: until its
 * release only the owner has it. Posts (`hidden`, which the release clears) and their uploaded
 * media (which know only their post's `releaseAt`) are held back by this one rule.
 */
export function withheld(releaseAt: number | null, now: number, reader: Reader): boolean {
  return reader !== 'owner' && releaseAt !== null && releaseAt > now;
}

/**
 * What a reader may see of a post (PROTOCOL.md B3, Embargo), on every path that sends one:
 * until its release a headline or an image is content as much as the text, so anyone but the
 * owner gets neither (`text` and `metadata` null).
 */
export function postFor(record: PostRecord, reader: Reader): Post {
  const post = storedPost(record);
  if (!record.hidden || reader === 'owner') return post;
  return { ...post, text: null, metadata: null };
}
