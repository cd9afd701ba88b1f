import { listStreams } from '../api/internal.js';
import type { PublishArgs } from '../protocol/types.js';
import { isPromptCancelled, promptForPost } from '../render/prompts.js';
import { EXIT, ExitError } from './exit.js';
import type { PostOptions } from './post-options.js';
import { postProblem, validatePost } from './validate-post.js';
import { formatReleaseTime, resolveReleaseAt } from './release-at.js';

export interface KnownPost {
  /** The stream: from `--stream`, the profile or the key itself; asked for (typed) only when none said. */
  streamId: string | undefined;
  content: string | undefined;
  /** `customTarget` and `idempotencyKey` from the flags. */
  fields: Record<string, unknown>;
}

/**
 * Asks on the terminal for what the flags left out, then for a confirmation, and returns
 * the post exactly as it will be sent: a relative release time is resolved once, on the
 * service's clock, and the confirmation shows that very time.
 */
export async function askForPost(
  options: PostOptions,
  known: KnownPost,
  now: () => number,
  apiKey: string,
): Promise<PublishArgs> {
  // Names and custom targets for the confirmation and the target question; the key's
  // user's streams, of which a stream key publishes to its own only.
  const streams = await listStreams(options.settings.endpoint, apiKey, options.timeoutMs).catch(() => []);
  const check = (releaseAt: string): string | true => {
    return postProblem({ streamId: 'x', content: 'x', contentType: 'rawtext', releaseAt }, options, now()) ?? true;
  };
  const answers = await promptForPost(
    {
      ...(known.streamId !== undefined ? { streamId: known.streamId } : {}),
      ...(known.content !== undefined ? { content: known.content } : {}),
      // Content given on the command line has the type the flags say (rawtext by default), as without a terminal.
      ...(options.contentTypeGiven || known.content !== undefined ? { contentType: options.contentType } : {}),
      ...(options.releaseAt !== undefined ? { releaseAt: resolveReleaseAt(options.releaseAt, now()) } : {}),
      ...(options.customTarget !== undefined ? { customTarget: options.customTarget } : {}),
    },
    {
      streams,
      checkReleaseAt: check,
      resolveReleaseAt: (typed) => resolveReleaseAt(typed, now()),
      describeReleaseAt: (iso) => formatReleaseTime(iso),
      editor: process.env['VISUAL'] || process.env['EDITOR'] || undefined,
    },
  ).catch((error: unknown) => {
    if (isPromptCancelled(error)) throw new ExitError(EXIT.usage, 'cancelled; nothing was published');
    throw error;
  });
  if (!answers) throw new ExitError(EXIT.usage, 'not confirmed; nothing was published');
  const fields: Record<string, unknown> = {
    ...known.fields,
    streamId: answers.streamId,
    content: answers.content,
    contentType: answers.contentType,
  };
  if (answers.releaseAt !== null) fields['releaseAt'] = answers.releaseAt;
  if (answers.customTarget !== null) fields['customTarget'] = answers.customTarget;
  // A release time that passed while the confirmation waited is refused like any other.
  return validatePost(fields, options, now());
}
