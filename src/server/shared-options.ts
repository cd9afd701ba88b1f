// The options startServer (src/api/start-options.ts) and the core server (server-options.ts)
// take alike, under one name each and documented once. serve's option table
// (src/api/serve-options.ts) gives each its flag, range and default; startServer checks them
// against it, and the core trusts what it is given.
//
// This file's types reach the package's declarations: it imports nothing that would carry a
// bundled library's types (zod, ws) along.
import type { Logger } from './logger.js';

export interface SharedServerOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 8787; 0 picks a free port (read it back from `server.url`). */
  port?: number;
  /** PEM certificate and key (contents, not paths): the server then speaks wss:// and https://. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** How long an idempotency key deduplicates, in ms. Default 600000 (10 min); 0 turns deduplication off. */
  idempotencyWindowMs?: number;
  /** How long an upload address (REST `uploadMedia`) takes uploads, in ms. Default 3600000 (1 hour). */
  uploadWindowMs?: number;
  /** Commands per second per connection (burst twice this). Default 200; 0 turns the limit off. */
  rateLimit?: number;
  /** Bytes queued for one subscriber before it is closed with 1013. Default 8 MiB. */
  maxBufferedBytes?: number;
  /** Interval of keep-alive events and pings, in ms. Default 30000. */
  keepAliveMs?: number;
  /**
   * Commands and REST requests per second per key, all its connections together (burst twice
   * this). Default 400, or 0 when `rateLimit` is 0; 0 turns it off.
   */
  keyRateLimit?: number;
  /** Open connections per key; past it a connection gets `limit-exceeded` and close 1008. Default 16; 0 = no cap. */
  maxConnectionsPerKey?: number;
  /**
   * Subscriptions per connection (a repeat of the same streams and format replaces its earlier
   * one). Default 64; 0 = no cap.
   */
  maxSubscriptions?: number;
  /** Commands one connection may have waiting for their turn before it is closed with 1008. Default 1000. */
  maxPendingCommands?: number;
  /** Hidden posts waiting for their releaseAt, per stream. Default 1000; 0 = no cap. */
  maxPendingReleases?: number;
  /** Text bytes of those hidden posts, per stream. Default 16 MiB; 0 = no cap. */
  maxPendingReleaseBytes?: number;
  /** Idempotency keys remembered per stream within the window. Default 10000; 0 = no cap. */
  maxIdempotencyKeys?: number;
  /** Text bytes of the posts those keys hold, per stream. Default 16 MiB; 0 = no cap. */
  maxIdempotencyBytes?: number;
  /**
   * The HTTP `/_admin/*` endpoints. Default: on when bound to a loopback address or
   * `adminToken` is set. The server's admin methods work either way.
   */
  admin?: boolean;
  /** Admin requests then need `Authorization: Bearer <adminToken>` (printable ASCII, no spaces). Never logged. */
  adminToken?: string;
  /**
   * Host names accepted besides loopback names, IP addresses and `host` (`.example.com` for
   * subdomains); `'all'` turns the check off, for serving behind a proxy.
   */
  allowedHosts?: readonly string[] | 'all';
  /** Browser origins accepted besides loopback ones, e.g. `https://app.example.com`; `'*'` accepts any. */
  allowedOrigins?: readonly string[];
  /** How long a request body may take to arrive (then 408), in ms. Default 10000. */
  bodyTimeoutMs?: number;
  /** How long request headers may take to arrive, in ms. Default 10000. */
  headersTimeoutMs?: number;
  /** Receives the server's log lines (never keys). Default: silent. */
  logger?: Logger;
  /**
   * A file that keeps the memory store's posts, pending releases, idempotency keys and clock
   * offset across restarts: loaded at start when it exists, saved a second after a change and
   * at `close()`. A file that cannot be used rejects with `invalid-state`; one that another live
   * process holds (one writer per file, a lock held until `close()`) with `state-locked`. Not
   * with a Redis store.
   */
  state?: string;
  /**
   * How a client that did not ask for our dialect (`hello=1`) gets a hidden post, as the
   * hosted service's clients expect: `'at-release'` (default) once at its release, as a new
   * post with its text; `'push'` hidden at creation and then `stream.post.released`, so an
   * author can test a client against that too (PROTOCOL.md B1a).
   */
  hostedHiddenPosts?: 'at-release' | 'push';
}
