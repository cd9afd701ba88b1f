import { fetchPostsFrom as fetchPosts, fetchStreamsFrom as fetchStreams, StreamNames } from '../../api/internal.js';
import type { Post } from '../../protocol/types.js';
import { supportsHyperlinks } from '../../render/hyperlinks.js';
import { jsonLine } from '../../render/json.js';
import { loadMarkdownRenderer } from '../../render/markdown.js';
import { formatPost } from '../../render/posts.js';
import { requireKey, type CommonOptions } from '../common.js';
import { EXIT } from '../exit.js';

export interface HistoryOptions extends CommonOptions {
  /** Undefined: every stream the key's user follows or owns. */
  streams: string[] | undefined;
  /** The most recent posts of each stream, 1-100. */
  limit: number;
}

/** Oldest first, as `listen --last` shows history; ids (ULIDs) order posts created in the same millisecond. */
function byCreation(a: Post, b: Post): number {
  return Date.parse(a.createdAt) - Date.parse(b.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** `history`: recent posts through REST, printed as `listen` prints them (`--json`: as `listen --json` does). */
export async function history(options: HistoryOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const { endpoints } = options.settings;
  const names = new StreamNames(endpoints, apiKey, options.timeoutMs);
  let streamIds = options.streams;
  if (streamIds === undefined || streamIds.length === 0) {
    const listed = await fetchStreams(endpoints, apiKey, options.timeoutMs);
    for (const stream of listed) names.remember(stream.id, stream.name);
    // The list is the service's directory: the key's own are those marked followed, when it marks them.
    const marked = listed.some((stream) => stream.following !== undefined);
    streamIds = listed.filter((stream) => !marked || stream.following === true).map((stream) => stream.id);
  }
  const perStream = await Promise.all(
    streamIds.map((id) => fetchPosts(endpoints, apiKey, id, options.limit, options.timeoutMs)),
  );
  const posts = await Promise.all(
    perStream
      .flat()
      .sort(byCreation)
      .map((post) => names.named(post)),
  );
  const out = process.stdout;
  if (options.json) {
    // The frames `listen --json` writes for the same posts, re-serialized the same way.
    out.write(posts.map((post) => `${jsonLine({ event: 'stream.post.created', data: post })}\n`).join(''));
    return EXIT.ok;
  }
  const width = Math.min(out.columns || 100, 120);
  const hyperlinks = options.color && supportsHyperlinks(out, process.env);
  const markdown = options.color ? await loadMarkdownRenderer({ color: true, width, hyperlinks }) : undefined;
  const view = { color: options.color, hyperlinks, markdown };
  out.write(posts.map((post) => `${formatPost(post, 'created', view)}\n\n`).join(''));
  if (posts.length === 0 && !options.quiet) process.stderr.write('stream-posts: no posts yet\n');
  return EXIT.ok;
}
