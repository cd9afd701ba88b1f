// What one server is started with, as the core takes it (startServer in src/api/ checks and
// documents each option), and the part of it a store enforces.
import type { PeerLink } from './admin/admin-peers.js';
import type { AdjustableClock } from './clock.js';
import { DEFAULTS } from './defaults.js';
import type { Logger } from './logger.js';
import type { Seed } from './service/seed.js';
import type { Store } from './stores/store.js';
import type { HiddenPosts } from './ws/fanout.js';

/** startServer (src/api/server.ts) has checked these against serve's option table: the core trusts them. */
export interface ServerOptions {
  seed: Seed;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  idempotencyWindowMs?: number;
  /** How long an upload address (REST `uploadMedia`) takes uploads. */
  uploadWindowMs?: number;
  /** Commands per second per connection; 0 turns the limit off. Burst is twice this. */
  rateLimit?: number;
  /**
   * Commands and REST requests per second per key, over all its connections; burst twice
   * this; 0 turns it off. Defaults to off when `rateLimit` is 0, else to 400.
   */
  keyRateLimit?: number;
  /** Open connections per key; past it a connection gets `limit-exceeded` and close 1008. 0 = no cap. */
  maxConnectionsPerKey?: number;
  /** Subscriptions one connection may hold (a repeat of the same streams and format replaces its earlier one). 0 = no cap. */
  maxSubscriptionsPerConnection?: number;
  /** Commands one connection may have waiting for their turn; past it the connection is closed with 1008. */
  maxPendingCommands?: number;
  /** Hidden posts waiting for their release, per stream: a count and their text's bytes. 0 = no cap. */
  maxPendingReleasesPerStream?: number;
  maxPendingReleaseBytesPerStream?: number;
  /** idempotencyKeys remembered per stream within the window, and the text bytes of their posts. 0 = no cap. */
  maxIdempotencyKeysPerStream?: number;
  maxIdempotencyBytesPerStream?: number;
  /** Bytes queued for one subscriber before it is closed with 1013. */
  maxBufferedBytes?: number;
  keepAliveMs?: number;
  /** Defaults to on when bound to a loopback address or when `adminToken` is set. */
  admin?: boolean;
  /** When set, admin requests need `Authorization: Bearer <adminToken>`. Never logged. */
  adminToken?: string;
  /**
   * Host names accepted besides loopback names, IP addresses and `host` (a leading dot
   * allows subdomains); `'all'` accepts any Host, for serving behind a proxy.
   */
  allowedHosts?: readonly string[] | 'all';
  /** Browser origins accepted besides loopback ones (`http://localhost:5173` needs no entry); `'*'` accepts any. */
  allowedOrigins?: readonly string[];
  /** How long a request body may take to arrive before the request is answered 408. */
  bodyTimeoutMs?: number;
  /** How long request headers may take to arrive. */
  headersTimeoutMs?: number;
  logger?: Logger;
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
  /**
   * How a connection in the hosted dialect (no `hello=1`) gets a hidden post: `at-release`
   * (the default: once, at its release, as a new post with its text) or `push` (hidden at
   * creation, then `stream.post.released`, as our dialect does). PROTOCOL.md B1a.
   */
  hostedHiddenPosts?: HiddenPosts;
  /**
   * A file the memory store's state (posts, pending releases, idempotency keys, the clock's
   * offset) is loaded from at `listen()` and saved to (docs/state-and-scenarios.md).
   */
  state?: string;
}

const STORE_CAPS = [
  'maxPendingReleasesPerStream',
  'maxPendingReleaseBytesPerStream',
  'maxIdempotencyKeysPerStream',
  'maxIdempotencyBytesPerStream',
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
