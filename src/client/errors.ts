/**
 * Why a client operation could not finish. The CLI maps `kind` to an exit code
 * (DESIGN.md): usage → 2, refused → 1, unreachable/unauthorized/timeout → 3.
 * `timeout`: the service accepted the connection or request, then did not answer
 * within the `timeoutMs` option.
 */
export type ClientErrorKind = 'usage' | 'refused' | 'unreachable' | 'unauthorized' | 'timeout';

export class ClientError extends Error {
  /** For `timeout`: what was awaited, and from where (`ack from ws://…`), as the message says it. */
  readonly awaited: string | undefined;
  /** For a refusal of a REST request: its HTTP status. */
  readonly status: number | undefined;

  constructor(
    readonly kind: ClientErrorKind,
    message: string,
    /** The service's error code, when the service gave one. */
    readonly code?: string,
    options: { cause?: unknown; awaited?: string; status?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ClientError';
    this.awaited = options.awaited;
    this.status = options.status;
  }
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

/** The default bound on every wait for the service (`timeoutMs` option). */
export const DEFAULT_TIMEOUT_MS = 30_000;
