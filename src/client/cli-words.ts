// The library's errors and outcomes in the command line's words (exit codes, flags'
// timeouts): shared by the CLI's commands and the demo's publisher, so neither imports the other.
import { StreamPostsError } from '../api/errors.js';
import type { PublishOptions } from '../api/publish.js';
import { ClientError, timeoutError } from './errors.js';
import type { PublishOutcome } from './publisher.js';
import type { PublishArgs } from '../protocol/types.js';

/**
 * A library error in the CLI's words, for its exit codes: the connection's own failure as
 * it was worded (it names what was awaited), a wait that ran out naming the flag's
 * timeout, a lost connection as unreachable. Undefined: the service's refusal, as data.
 */
export function inCliWords(error: StreamPostsError, timeoutMs: number, awaited: string): ClientError | undefined {
  if (error.cause instanceof ClientError) return error.cause;
  if (error.code === 'timeout')
    return new ClientError('timeout', timeoutError(timeoutMs, awaited).message, undefined, { cause: error });
  if (error.code === 'closed' || error.code === 'unreachable')
    return new ClientError('unreachable', error.message, undefined, { cause: error });
  return undefined;
}

/** What to throw when a library error ends the command: a refusal ends it too (exit 1). */
export function commandFailure(error: unknown, timeoutMs: number, awaited: string): unknown {
  if (!(error instanceof StreamPostsError)) return error;
  return (
    inCliWords(error, timeoutMs, awaited) ?? new ClientError('refused', error.message, error.code, { cause: error })
  );
}

/** A failed publish: the service's refusal as an outcome to report, anything else thrown in the CLI's words. */
export function refusalOf(error: unknown, timeoutMs: number, awaited: string): PublishOutcome {
  if (!(error instanceof StreamPostsError)) throw error;
  const failure = inCliWords(error, timeoutMs, awaited);
  if (failure) throw failure;
  return {
    ok: false,
    code: error.code,
    message: error.message,
    ...(error.status === undefined ? {} : { status: error.status }),
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
