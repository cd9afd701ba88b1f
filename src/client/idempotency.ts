import { randomUUID } from 'node:crypto';

/** A key unique to this post, so the client's own retries can never publish it twice. */
export function generateIdempotencyKey(): string {
  return `sp-${randomUUID()}`;
}

/**
 * Adds a generated key when the post has none. Done when sending, not when
 * validating: `--dry-run` prints no key it would not send, and does not load
 * the crypto module.
 */
export function withIdempotencyKey<T extends { idempotencyKey?: unknown }>(args: T): T {
  return args.idempotencyKey === null || args.idempotencyKey === undefined
    ? { ...args, idempotencyKey: generateIdempotencyKey() }
    : args;
}
