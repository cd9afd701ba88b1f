// What one server is started with, as the core takes it (startServer in src/api/ checks each
// option; shared-options.ts documents those both take), and the part of it a store enforces.
import type { PeerLink } from './admin/admin-peers.js';
import type { AdjustableClock } from './clock.js';
import { DEFAULTS } from './defaults.js';
import type { ReplaySettings } from './replay/replay.js';
import type { Seed } from './service/seed.js';
import type { Store } from './stores/store.js';
import type { SharedServerOptions } from './shared-options.js';

/**
 * startServer (src/api/server.ts) has checked these against serve's option table: the core
 * trusts them. Beside the options both take alike, the core takes the seed parsed, and where
 * startServer takes a store URL, the store itself or how to open it.
 */
export interface ServerOptions extends SharedServerOptions {
  seed: Seed;
  /**
   * One of several instances acting as one service (serve --workers): its connection ids
   * start with `instance.name` (`w2-` gives `w2-c5`), and the admin endpoints about
   * connections, faults and keep-alive rounds answer for every instance through `link`.
   */
  instance?: { name: string; link: PeerLink };
  clock?: AdjustableClock;
  /** Replaces the in-memory store (the clock and seed are then the store's business). */
  store?: Store;
  /**
   * Keeps all state in Redis instead of this process, so several servers on one Redis act
   * as one service (`startServer` opens the store). `prefix` (default `stream-posts:`)
   * separates services sharing a Redis; `resetStore` replaces a keyspace holding another seed;
   * `allowEviction` starts on a Redis whose `maxmemory-policy` may evict keys (refused otherwise).
   */
  redis?: { url: string; prefix?: string; resetStore?: boolean; allowEviction?: boolean };
  /** A recording served back before the simulated service (`serve --replay`), checked. */
  replay?: ReplaySettings;
}

const STORE_CAPS = [
  'maxPendingReleases',
  'maxPendingReleaseBytes',
  'maxIdempotencyKeys',
  'maxIdempotencyBytes',
] as const;

/** What a store enforces, from the server's options (startServer has checked them). */
export function storeLimits(
  options: ServerOptions,
): { idempotencyWindowMs: number } & Record<(typeof STORE_CAPS)[number], number> {
  const caps = Object.fromEntries(STORE_CAPS.map((name) => [name, options[name] ?? DEFAULTS[name]]));
  return {
    idempotencyWindowMs: options.idempotencyWindowMs ?? DEFAULTS.idempotencyWindowMs,
    ...(caps as Record<(typeof STORE_CAPS)[number], number>),
  };
}
