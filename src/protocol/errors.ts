/** Error codes of PROTOCOL.md B5. Tests and clients branch on these, never on wording. */
export const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'not-found',
  'invalid-argument',
  'bad-json',
  'bad-request',
  'unknown-command',
  'rate-limited',
  'limit-exceeded',
  'internal',
  'unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

/**
 * A failure the service reports to its peer as an `error` event or REST error body. It is
 * an expected outcome, never a bug, so it carries no stack: capturing one for each of a
 * flood of bad frames cost more than everything else the server did with them.
 */
export class ProtocolError extends Error {
  declare readonly code: ErrorCode;
  declare readonly command: string | undefined;
  /** For `invalid-argument`: the field of the command that is wrong (`releaseAt`), when one is. */
  declare readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, command?: string, field?: string) {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ProtocolError';
    this.code = code;
    this.command = command;
    this.field = field;
  }
}

/** HTTP status for each code on the REST surface (PROTOCOL.md B6). */
export const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  'invalid-argument': 400,
  'bad-json': 400,
  'bad-request': 400,
  'unknown-command': 400,
  'rate-limited': 429,
  // A cap that lifts only when something the key holds goes away: retrying at once will not help.
  'limit-exceeded': 403,
  internal: 500,
  // The service's store (Redis) is unreachable: nothing was stored, a retry later can succeed.
  unavailable: 503,
};

/** The hosted service's wording for an unknown key (PROTOCOL.md B2). */
export const UNAUTHORIZED_MESSAGE = 'Invalid secret key';
/** The hosted service's wording for a request that carries no key at all. */
export const MISSING_KEY_MESSAGE = 'No secret key provided';

/** Why a key was refused, in the hosted service's words: none given, or not one the service knows. */
export function unauthorizedMessage(key: string | undefined): string {
  return key === undefined || key === '' ? MISSING_KEY_MESSAGE : UNAUTHORIZED_MESSAGE;
}
