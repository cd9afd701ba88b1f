// Apart from the store, so the CLI can recognise it without loading the Redis client.
/**
 * Why a Redis store could not be opened: another seed in the keyspace (the message names the
 * way out), no Redis, a Redis that may evict keys (`maxmemory-policy`), or one before 7.0.
 */
export class StoreError extends Error {
  constructor(
    readonly code: 'store-seed-mismatch' | 'store-unreachable' | 'store-evicts' | 'store-unsupported',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}
