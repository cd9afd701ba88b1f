/**
 * What `serve` needs of the library beyond startServer: its log lines, a seed file's check,
 * the Redis store's address and its failures, and opening the store once before the workers
 * of `serve --workers` start. Not exported from the package (the CLI reaches it through internal.ts).
 */
import type { Seed } from '../protocol/seed.js';
import { AdjustableClock } from '../server/clock.js';
import { parseSeedText, SeedError } from '../server/service/seed.js';
import { DEFAULT_REDIS_PREFIX } from '../server/stores/redis/redis-keys.js';

// The Redis address's default prefix and its redaction, for serve's banner and errors.
export { DEFAULT_REDIS_PREFIX, redactRedisUrl } from '../server/stores/redis/redis-keys.js';
import { StoreError } from '../server/stores/store-error.js';
import { StreamPostsError } from './errors.js';

/** A seed file's text checked: a bad seed is `invalid-seed`, its `path` naming the field. */
export function parseSeedFile(text: string): Seed {
  try {
    return parseSeedText(text);
  } catch (error) {
    if (error instanceof SeedError)
      throw new StreamPostsError('invalid-seed', error.message, { cause: error, path: error.path });
    throw error;
  }
}

/** The code of a Redis store that cannot be used (`store-evicts`, `store-unreachable`, …); undefined for any other error. */
export function storeErrorCode(error: unknown): StoreError['code'] | undefined {
  return error instanceof StoreError ? error.code : undefined;
}

export interface RedisStorePlan {
  url: string;
  prefix?: string | undefined;
  resetStore?: boolean | undefined;
  allowEviction?: boolean | undefined;
  seed: Seed;
  idempotencyWindowMs: number;
}

/**
 * Opens the Redis store once and closes it: the seed loaded (or the keyspace's replaced, with
 * `resetStore`) before any instance starts. A store that cannot be used rejects as startServer
 * would (`storeErrorCode` names it).
 */
export async function prepareRedisStore(plan: RedisStorePlan): Promise<void> {
  const { RedisStore } = await import('../server/stores/redis/redis-store.js');
  const store = await RedisStore.open({
    url: plan.url,
    prefix: plan.prefix ?? DEFAULT_REDIS_PREFIX,
    resetStore: plan.resetStore ?? false,
    allowEviction: plan.allowEviction ?? false,
    seed: plan.seed,
    clock: new AdjustableClock(),
    idempotencyWindowMs: plan.idempotencyWindowMs,
  });
  await store.close();
}
