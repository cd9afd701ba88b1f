/**
 * Why a client operation could not finish. The CLI maps `kind` to an exit code
 * (DESIGN.md): usage → 2, refused → 1, unreachable/unauthorized/timeout → 3.
 * `timeout`: the service accepted the connection or request, then did not answer
 * within the `timeoutMs` option.
 */
export type ClientErrorKind = 'usage' | 'refused' | 'unreachable' | 'unauthorized' | 'timeout';

/**
 * The service's own words when it refused the key, apart from the sentence around them.
 * `reply`: its answer, an error frame's message (`Invalid secret key`) or a REST reply's
 * status and message (`HTTP 401: Invalid secret key`); `close`: the WebSocket close that
 * refused it (`close 4401, unauthorized`).
 */
export interface KeyRefusal {
  readonly by: 'reply' | 'close';
  readonly detail: string;
}

/**
 * "The service refused the key": the one place that sentence is made, by the library and by
 * the CLI, which says where the key came from in `key` (`the key from --api-key`).
 */
export function keyRefusedMessage(refusal: KeyRefusal, key = 'the key'): string {
  return refusal.by === 'close'
    ? `the service refused ${key} (${refusal.detail})`
    : `the service refused ${key}: ${refusal.detail}`;
}

export class ClientError extends Error {
  /** For `timeout`: what was awaited, and from where (`ack from ws://…`), as the message says it. */
  readonly awaited: string | undefined;
  /** For a refusal of a REST request: its HTTP status. */
  readonly status: number | undefined;
  /** For `unauthorized`, when the service said why: its words apart from the message's sentence. */
  readonly refusal: KeyRefusal | undefined;
  /** For a post whose ack never came: the key it was sent with, to publish it again at most once. */
  readonly idempotencyKey: string | undefined;

  constructor(
    readonly kind: ClientErrorKind,
    message: string,
    /** The service's error code, when the service gave one. */
    readonly code?: string,
    options: { cause?: unknown; awaited?: string; status?: number; refusal?: KeyRefusal; idempotencyKey?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ClientError';
    this.awaited = options.awaited;
    this.status = options.status;
    this.refusal = options.refusal;
    this.idempotencyKey = options.idempotencyKey;
  }
}

/** The error for a key the service refused, its words kept apart in `refusal`. */
export function keyRefusedError(refusal: KeyRefusal, options: { status?: number } = {}): ClientError {
  return new ClientError('unauthorized', keyRefusedMessage(refusal), 'unauthorized', { ...options, refusal });
}

/** A socket or fetch failure in words people know; the system's own message otherwise. */
export function describeNetworkError(error: { code?: string | undefined; message: string }): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is the service running?)';
    case 'ENOTFOUND':
      return 'host not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case 'ECONNRESET':
      return 'connection reset';
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return `${error.message}: to trust the service's own certificate (say a serve --tls-cert one), run with NODE_EXTRA_CA_CERTS=cert.pem`;
    default:
      return error.message;
  }
}

/** A wait as people read it: "300ms", "30s", "1.5s". */
export function formatWait(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
}

/** The error for a wait that ran out; `what` names what was awaited and from where. */
export function timeoutError(timeoutMs: number, what: string): ClientError {
  return new ClientError('timeout', `timed out after ${formatWait(timeoutMs)} waiting for ${what}`, undefined, {
    awaited: what,
  });
}

/** What a post whose ack never came may have done, and how to publish it at most once, in the library's words. */
export function mayBePublished(idempotencyKey: string): string {
  return `the post may have been published: publish it again with idempotencyKey "${idempotencyKey}" to publish it at most once`;
}

/** The default bound on every wait for the service (`timeoutMs` option). */
export const DEFAULT_TIMEOUT_MS = 30_000;
