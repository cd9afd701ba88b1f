import { ERROR_CODES, type ErrorCode } from '../protocol/errors.js';
import { ClientError, type KeyRefusal } from '../client/errors.js';
import { secretScrubber } from '../protocol/redact.js';

/** Codes the client adds to the protocol's own (PROTOCOL.md B5). */
export const CLIENT_ERROR_CODES = [
  /** A wait bounded by `timeoutMs` ran out. */
  'timeout',
  /** The service could not be reached, or the connection ended and could not be restored. */
  'unreachable',
  /** The client (or subscription) was closed before the operation finished. */
  'closed',
  /** A subscription's consumer fell more than `bufferSize` events behind. */
  'overflow',
  /** The service acknowledged a subscription other than the one asked for (other streams, a `lastPosts` over what was asked). */
  'unexpected-reply',
  /** `startServer` was given a seed that does not validate; `path` names the field. */
  'invalid-seed',
  /** `startServer` was given a state file it cannot use (corrupt, truncated, another seed or version). */
  'invalid-state',
  /** `startServer` was given a state file another live process holds; the message names the file and its PID. */
  'state-locked',
  /** `server.play` was given a scenario with a bad step; `path` names the step (or line) and the message the field. */
  'invalid-scenario',
  /** A recording proxy's last scan found a secret no redaction covered: nothing was saved; `path` names the place (a JSON path). */
  'secret-in-recording',
  /** `startServer` was given a recording to replay that does not validate; `path` names the file and place. */
  'invalid-recording',
] as const;

export type StreamPostsErrorCode = ErrorCode | (typeof CLIENT_ERROR_CODES)[number];

export const STREAM_POSTS_ERROR_CODES: readonly StreamPostsErrorCode[] = [...ERROR_CODES, ...CLIENT_ERROR_CODES];

/** Every failure of the library's own making; branch on `code`, never on the wording. */
export class StreamPostsError extends Error {
  readonly code: StreamPostsErrorCode;
  /** For `invalid-seed`: the field, e.g. `seed.streams[1].owner`; for `invalid-scenario`: the step, e.g. `line 3`. */
  readonly path: string | undefined;
  /** For a refusal of a REST request (`publishRest`, `setCustomTargets`): the HTTP status. */
  readonly status: number | undefined;
  /**
   * For `timeout`, when the client itself timed the wait: what for, and from where (`ack from
   * ws://…`), which the message says too. Undefined for the bound of a whole call
   * (`timeoutMs` of `connect` or `publish`).
   */
  readonly awaited: string | undefined;
  /**
   * For `unauthorized`, when the service said why: its own words apart from the library's
   * sentence, `{ by: 'reply', detail: 'HTTP 401: Invalid secret key' }` (a REST reply; an
   * error frame's is its message alone) or `{ by: 'close', detail: 'close 4401, unauthorized' }`.
   */
  readonly refusal: KeyRefusal | undefined;
  /**
   * For a publish's `timeout`: the idempotency key the post was sent with. The post may
   * have been published; publishing it again with this key publishes it at most once.
   */
  readonly idempotencyKey: string | undefined;

  constructor(
    code: StreamPostsErrorCode,
    message: string,
    options: {
      cause?: unknown;
      path?: string;
      status?: number;
      awaited?: string;
      refusal?: KeyRefusal;
      idempotencyKey?: string;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StreamPostsError';
    this.code = code;
    this.path = options.path;
    this.status = options.status;
    this.awaited = options.awaited;
    this.refusal = options.refusal;
    this.idempotencyKey = options.idempotencyKey;
  }
}

export { keyRefusedMessage, type KeyRefusal } from '../client/errors.js';

function isKnownCode(code: string | undefined): code is StreamPostsErrorCode {
  return code !== undefined && (STREAM_POSTS_ERROR_CODES as readonly string[]).includes(code);
}

/**
 * Below this a "key" is no secret a service would issue (serve's seeds require 8
 * characters), and cutting it out would garble every message: a key `k` would take
 * the k out of every word.
 */
const MIN_REDACTED_LENGTH = 8;

/**
 * Keys must never reach a message, even one a service echoed back: every
 * secret the caller handed us is cut out of the text, escaped (`%5F`) or not.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  const known = secrets.filter(
    (secret): secret is string => secret !== undefined && secret.length >= MIN_REDACTED_LENGTH,
  );
  return known.length === 0 ? text : secretScrubber(known, '[redacted]')(text);
}

/**
 * The client's error with its message redacted: kept as the cause, it is what the CLI
 * prints, so the original (which may name the key) is not passed on.
 */
export function redactedClientError(error: ClientError, secrets: readonly (string | undefined)[]): ClientError {
  const message = redactSecrets(error.message, secrets);
  const refusal = error.refusal && { by: error.refusal.by, detail: redactSecrets(error.refusal.detail, secrets) };
  if (message === error.message && refusal?.detail === error.refusal?.detail) return error;
  const awaited = error.awaited === undefined ? undefined : redactSecrets(error.awaited, secrets);
  const { status, idempotencyKey } = error;
  return new ClientError(error.kind, message, error.code, { awaited, status, refusal, idempotencyKey });
}

/** A client-side failure in the library's terms, the original kept as `cause` (a copy without the key, when it named one). */
export function fromClientError(error: unknown, secrets: readonly (string | undefined)[]): StreamPostsError {
  if (error instanceof StreamPostsError) return error;
  if (error instanceof ClientError) {
    const code: StreamPostsErrorCode =
      error.kind === 'unauthorized' || error.kind === 'timeout'
        ? error.kind
        : isKnownCode(error.code)
          ? error.code
          : error.kind === 'refused'
            ? 'internal'
            : 'unreachable';
    const redacted = redactedClientError(error, secrets);
    const { status, awaited, refusal, idempotencyKey } = redacted;
    return new StreamPostsError(code, redacted.message, { cause: redacted, status, awaited, refusal, idempotencyKey });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StreamPostsError('internal', redactSecrets(message, secrets), { cause: error });
}
