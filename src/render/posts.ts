import type { ChalkInstance } from 'chalk';
import type { Post } from '../protocol/types.js';
import { formatBodyText, type TextView } from './body.js';
import { createChalk, streamColour } from './style.js';
import { momentText, oneLine } from './text.js';

export type PostView = TextView;

/**
 * One post as `listen` prints it: a header line (time, stream, custom target),
 * then the text, or a locked line while the text is hidden. Plain output is
 * ASCII apart from the post's own text, so scripts can match on it.
 */
export function formatPost(post: Post, kind: 'created' | 'released', view: PostView): string {
  const c = createChalk(view.color);
  const shownAt = kind === 'released' && post.releaseAt !== null ? post.releaseAt : post.createdAt;
  const header = [
    c.dim(momentText(Date.parse(shownAt), view)),
    c[streamColour(post.streamId)].bold(oneLine(post.streamName) ?? oneLine(post.streamId) ?? '?'),
  ];
  const target = post.customTarget === null ? undefined : oneLine(post.customTarget);
  if (target !== undefined) header.push(c.dim(`${view.color ? '→' : '->'} ${target}`));
  if (kind === 'released') header.push(view.color ? c.green('🔓 released') : '[released]');
  const body =
    post.text === null
      ? lockedLine(post.releaseAt, view, c)
      : formatBodyText(post.text, post.contentType === 'markdown', view, c);
  return body === '' ? header.join(' ') : `${header.join(' ')}\n${body}`;
}

function lockedLine(releaseAt: string | null, view: PostView, c: ChalkInstance): string {
  const releaseMs = releaseAt === null ? Number.NaN : Date.parse(releaseAt);
  let until: string | undefined;
  if (!Number.isNaN(releaseMs)) {
    // Plain output gives the exact instant; a person reads local time.
    until = view.color ? momentText(releaseMs, view) : new Date(releaseMs).toISOString();
  } else if (releaseAt !== null) {
    until = oneLine(releaseAt);
  }
  const text = until === undefined ? 'hidden' : `hidden until ${until}`;
  return view.color ? c.yellow(`🔒 ${text}`) : `[${text}]`;
}
