import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares a bearer token in constant time: both sides are hashed, so even the length does not leak. */
export function createTokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const match = /^Bearer +(.+)$/i.exec(authorization?.trim() ?? '');
    const given = createHash('sha256')
      .update(match?.[1] ?? '')
      .digest();
    return timingSafeEqual(given, expected) && match !== null;
  };
}
