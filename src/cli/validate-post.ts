import { parsePublishArgs } from '../protocol/commands.js';
import { ProtocolError } from '../protocol/errors.js';
import type { ContentType, PublishArgs } from '../protocol/types.js';
import { usageError } from './exit.js';
import { pastReleaseAt, RELEASE_AT_FORMS, resolveReleaseAt, type PublishDefaults } from './release-at.js';

/**
 * Turns one post's fields (flags, a prompt's answers or a batch line) into
 * validated `add-stream-post` arguments, filling in the defaults (the
 * idempotency key is added when sending: see withIdempotencyKey). Throws a
 * ProtocolError naming the bad field.
 */
export function buildPublishArgs(
  input: Record<string, unknown>,
  defaults: PublishDefaults,
  now: number = Date.now(),
): PublishArgs {
  const data: Record<string, unknown> = { ...input };
  data['streamId'] ??= defaults.streamId;
  data['contentType'] ??= defaults.contentType;
  if (typeof data['releaseAt'] === 'string') data['releaseAt'] = resolveReleaseAt(data['releaseAt'], now);
  return parsePublishArgs(data);
}

/** The flag a field of add-stream-post is given with: `post`'s errors name what the user typed. */
const FIELD_FLAGS: Record<string, string> = {
  streamId: '--stream',
  contentType: '--content-type',
  releaseAt: '--release-at',
  customTarget: '--custom-target',
  idempotencyKey: '--idempotency-key',
};

export interface PostRules {
  stream: string | undefined;
  contentType: ContentType;
  /** A release time in the past publishes at once instead of being refused. */
  allowPast: boolean;
}

/** A post's fields checked: the arguments, or what is wrong in the flags' words. */
type CheckedPost = { args: PublishArgs } | { problem: string; invalidField: boolean; cause?: unknown };

function checkPost(fields: Record<string, unknown>, rules: PostRules, now: number): CheckedPost {
  let args: PublishArgs;
  try {
    args = buildPublishArgs(fields, { streamId: rules.stream, contentType: rules.contentType }, now);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    const field = error.field ?? '';
    const flag = FIELD_FLAGS[field];
    // The message starts with the field's name: the flag takes its place.
    const message = flag === undefined ? error.message : error.message.replace(field, flag);
    const forms = field === 'releaseAt' ? ` (${RELEASE_AT_FORMS})` : '';
    return { problem: `${message}${forms}`, invalidField: true, cause: error };
  }
  if (args.releaseAt && !rules.allowPast) {
    const past = pastReleaseAt(args.releaseAt, now);
    if (past !== undefined) return { problem: past, invalidField: false };
  }
  return { args };
}

/**
 * `post`'s fields checked as the service would, and a release time that is not after `now`
 * (the service's time) refused unless allowed; usage errors naming the flags.
 */
export function validatePost(fields: Record<string, unknown>, rules: PostRules, now: number): PublishArgs {
  const checked = checkPost(fields, rules, now);
  if ('args' in checked) return checked.args;
  const message = checked.invalidField ? `invalid post: ${checked.problem}` : checked.problem;
  throw usageError(message, checked.cause === undefined ? undefined : { cause: checked.cause });
}

/** What is wrong with a post's fields in the flags' words (a prompt shows it under the answer), or undefined. */
export function postProblem(fields: Record<string, unknown>, rules: PostRules, now: number): string | undefined {
  const checked = checkPost(fields, rules, now);
  return 'problem' in checked ? checked.problem : undefined;
}
