import { generateIdempotencyKey } from '../client/idempotency.js';
import type { PublishOutcome } from '../client/publisher.js';
import type { ContentType, Post, PublishArgs } from '../protocol/types.js';
import { redactSecrets, StreamPostsError } from './errors.js';
import { integer, optional, requiredText, shaped, text, type OptionSchema, type TableValues } from './option-table.js';
import { optionError } from './options.js';

export interface PublishOptions {
  streamId: string;
  content: string;
  /** Default `rawtext`. */
  contentType?: ContentType;
  /** Hidden until then: a Date, epoch ms or an ISO 8601 string. */
  releaseAt?: Date | number | string;
  /** Required on a custom stream: one of its targets. */
  customTarget?: string;
  /** Generated when not given, so retries after a reconnect never publish twice. */
  idempotencyKey?: string;
  /**
   * `client.publish`: the longest wait for the acknowledgement, instead of the client's; 0 waits
   * as long as the client lives, through reconnects and rate-limit retries (a bulk load).
   * `publishRest`: the longest wait for each reply. Default 10000.
   */
  timeoutMs?: number;
}

/** `releaseAt`: a Date, epoch ms or an ISO 8601 string (the service checks the string). */
const RELEASE_AT: OptionSchema<Date | number | string> = shaped(
  (value) => typeof value === 'string' || typeof value === 'number' || value instanceof Date,
  (name) => `${name} must be a Date, epoch milliseconds or an ISO 8601 string`,
);

/**
 * The options that are the post itself: the fields of `add-stream-post`.
 * @internal
 */
export const POST_OPTIONS = {
  streamId: requiredText,
  content: requiredText,
  ...optional({ contentType: text, releaseAt: RELEASE_AT, customTarget: text, idempotencyKey: text }),
};
/** @internal */
export const PUBLISH_FIELDS = Object.keys(POST_OPTIONS) as (keyof PublishOptions)[];
/**
 * `client.publish`'s options: the post, and its own wait (0: as long as the client lives).
 * @internal
 */
export const PUBLISH_OPTIONS = { ...POST_OPTIONS, ...optional({ timeoutMs: integer(0, 2_147_483_647) }) };

export interface PublishResult {
  post: Post;
  /** True when an earlier post with the same idempotency key was returned instead of a new one. */
  duplicate: boolean;
  /** The key the post was sent with (given or generated). */
  idempotencyKey: string;
}

function toIso(value: Date | number | string): string {
  if (typeof value === 'string') return value;
  const date = typeof value === 'number' ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) throw optionError('range', 'releaseAt', 'releaseAt is not a valid date');
  return date.toISOString();
}

/**
 * The post to send, from checked options; the idempotency key generated when not given.
 * @internal
 */
export function readPublishOptions(given: TableValues<typeof POST_OPTIONS>): PublishArgs & { idempotencyKey: string } {
  return {
    streamId: given.streamId,
    content: given.content,
    contentType: (given.contentType ?? 'rawtext') as ContentType,
    releaseAt: given.releaseAt === undefined ? null : toIso(given.releaseAt),
    customTarget: given.customTarget ?? null,
    idempotencyKey: given.idempotencyKey ?? generateIdempotencyKey(),
  };
}

/** The service's answer as the library gives it: a refusal rejects with its code (and HTTP status, over REST). */
export function publishResult(
  outcome: PublishOutcome,
  idempotencyKey: string,
  secrets: readonly string[],
): PublishResult {
  if (!outcome.ok) {
    throw new StreamPostsError(
      outcome.code as StreamPostsError['code'],
      redactSecrets(outcome.message, secrets),
      outcome.status === undefined ? {} : { status: outcome.status },
    );
  }
  // A resend of the client's own (after a reconnect, or a REST retry) finds its first attempt: that is no earlier post.
  return { post: outcome.post, duplicate: outcome.duplicate && outcome.attempts <= 1, idempotencyKey };
}

/** The result, or the service's refusal (which `publishResult` throws) as a value. */
export function refusalAsValue(result: () => PublishResult): PublishResult | StreamPostsError {
  try {
    return result();
  } catch (error) {
    if (error instanceof StreamPostsError) return error;
    throw error;
  }
}
