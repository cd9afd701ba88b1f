import { ProtocolError } from '../../protocol/errors.js';
import { MAX_LAST_POSTS, REST_DEFAULT_LIMIT } from '../../protocol/limits.js';
import type { Post } from '../../protocol/types.js';
import { decodeToken, encodeToken, queryDate, queryInteger, queryValue } from './rest-query.js';
import type { StreamPostsService } from '../service/service.js';
import { postFor } from '../service/visibility.js';
import type { Identity } from '../stores/store.js';

const POST_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Where the previous page ended: the id of its oldest post (ids sort by storage order). */
function pageStart(url: URL): string | undefined {
  const nextToken = queryValue(url, 'nextToken');
  const cursor = queryValue(url, 'cursor');
  if (nextToken !== undefined && cursor !== undefined && nextToken !== cursor) {
    throw new ProtocolError('invalid-argument', 'give nextToken or cursor (the same token), not two different ones');
  }
  const token = nextToken ?? cursor;
  if (token === undefined) return undefined;
  const name = nextToken === undefined ? 'cursor' : 'nextToken';
  const before = decodeToken(token, name)['before'];
  if (typeof before !== 'string' || !POST_ID.test(before)) {
    throw new ProtocolError('invalid-argument', `${name} is malformed: pass it back as it was`);
  }
  return before;
}

/**
 * `GET /v1/streams/{id}/posts`: the stream's posts newest first, for a follower or the owner,
 * one page at a time; hidden posts are listed hidden, whole to the owner only. Only the history the service keeps
 * (the last 100 posts of each stream) can be paged through.
 */
export async function listPosts(
  service: StreamPostsService,
  identity: Identity,
  streamId: string,
  url: URL,
): Promise<{ posts: Post[]; nextToken?: string }> {
  const limit = queryInteger(url, 'limit', 1, MAX_LAST_POSTS, REST_DEFAULT_LIMIT);
  const before = pageStart(url);
  const from = queryDate(url, 'fromDate');
  const to = queryDate(url, 'toDate');
  if (from !== undefined && to !== undefined && from > to) {
    throw new ProtocolError('invalid-argument', 'fromDate must not be after toDate');
  }
  // As a subscription to it would be refused: unknown → not-found, not followed → forbidden.
  const { posts, reader } = await service.storedHistory(identity, streamId, 'GET posts');
  const matching = posts
    .filter(
      (post) =>
        (before === undefined || post.id < before) &&
        (from === undefined || post.createdAt >= from) &&
        (to === undefined || post.createdAt <= to),
    )
    .reverse();
  const page = matching.slice(0, limit);
  const oldest = page.at(-1);
  return {
    posts: page.map((post) => postFor(post, reader)),
    ...(matching.length > limit && oldest ? { nextToken: encodeToken({ before: oldest.id }) } : {}),
  };
}
