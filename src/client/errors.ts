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
