/**
 * Why a client operation could not finish. The CLI maps `kind` to an exit code
 * (DESIGN.md): usage → 2, refused → 1, unreachable/unauthorized → 3.
 */
export type ClientErrorKind = 'usage' | 'refused' | 'unreachable' | 'unauthorized';

export class ClientError extends Error {
  constructor(
    readonly kind: ClientErrorKind,
    message: string,
    /** The service's error code, when the service gave one. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ClientError';
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
    default:
      return error.message;
  }
}
