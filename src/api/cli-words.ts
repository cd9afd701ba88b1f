/**
 * The library's errors and outcomes in the command line's words: a wait that ran out names
 * what was awaited with the flag's timeout, a refusal of a post is an outcome to report.
 * Shared by the CLI's commands and the demo's publisher, so neither imports the other. Not
 * exported from the package (the CLI reaches it through internal.ts).
 */
import type { PublishOutcome } from '../client/publisher.js';
import { formatWait } from '../client/errors.js';
import type { PublishArgs } from '../protocol/types.js';
import { StreamPostsError } from './errors.js';
import type { PublishOptions, PublishResult } from './publish.js';

/**
 * What to throw when a library error ends a command: the error itself (the CLI's exit code
 * comes from its code), a wait that ran out in the flag's words: the `--timeout` it had, and
 * what was awaited, as the client says when it timed the wait itself (`awaited`), as the
 * command says otherwise.
 */
export function commandFailure(
  error: unknown,
  timeoutMs: number,
  awaited: string,
  /** For a post whose ack never came: how to publish it again at most once with its key. */
  publishAgain: (idempotencyKey: string) => string = (key) => `re-run with --idempotency-key ${key}`,
): unknown {
  if (!(error instanceof StreamPostsError) || error.code !== 'timeout') return error;
  const what = error.awaited ?? awaited;
  const { idempotencyKey } = error;
  const words = `timed out after ${formatWait(timeoutMs)} waiting for ${what}`;
  return new StreamPostsError(
    'timeout',
    idempotencyKey === undefined
      ? words
      : `${words}; the post may have been published: ${publishAgain(idempotencyKey)} to publish it at most once`,
    { cause: error, awaited: what, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) },
  );
}

/** A publish's answer as an outcome to report: the service's refusal as data (the post was not stored). */
export function outcomeOf(answer: PublishResult | StreamPostsError): PublishOutcome {
  if (!(answer instanceof StreamPostsError))
    return { ok: true, post: answer.post, duplicate: answer.duplicate, attempts: 1 };
  return {
    ok: false,
    code: answer.code,
    message: answer.message,
    ...(answer.status === undefined ? {} : { status: answer.status }),
  };
}

/** The CLI's validated post as the library's publish options (which leave unset what the CLI sets to null). */
export function publishOptionsOf(args: PublishArgs): PublishOptions {
  return {
    streamId: args.streamId,
    content: args.content,
    contentType: args.contentType,
    ...(args.idempotencyKey ? { idempotencyKey: args.idempotencyKey } : {}),
    ...(args.releaseAt ? { releaseAt: args.releaseAt } : {}),
    ...(args.customTarget ? { customTarget: args.customTarget } : {}),
  };
}
