import { afterAll, afterEach, beforeAll } from 'vitest';
import type { PublishRequest, Store } from '../../src/server/stores/store.js';
import { RedisServer } from './redis-server.js';

/** A publish of a short public post to the demo seed's macro-wire, with any fields changed. */
export function publishRequest(overrides: Partial<PublishRequest> = {}): PublishRequest {
  return {
    streamId: 'macro-wire',
    text: 'hello',
    contentType: 'rawtext',
    releaseAt: null,
    customTarget: null,
    idempotencyKey: null,
    ...overrides,
  };
}

/**
 * A redis-server for the calling test file, started before its tests and stopped after them;
 * the stores a test `keep`s are closed when it ends. Each `prefix()` is a keyspace of its own.
 */
export function redisForFile(): { readonly url: string; prefix(): string; keep<S extends Store>(store: S): S } {
  let redis: RedisServer | undefined;
  let keyspaces = 0;
  const opened: Store[] = [];
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  afterAll(() => redis?.stop());
  return {
    get url() {
      return redis!.url;
    },
    prefix: () => `unit${++keyspaces}:`,
    keep(store) {
      opened.push(store);
      return store;
    },
  };
}
