/** Defaults of `serve`, apart from the server so the CLI can show them without loading it. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8787,
  idempotencyWindowMs: 10 * 60_000,
  rateLimit: 200,
  keyRateLimit: 400,
  maxConnectionsPerKey: 16,
  maxSubscriptionsPerConnection: 64,
  maxPendingCommands: 1000,
  maxPendingReleasesPerStream: 1000,
  maxPendingReleaseBytesPerStream: 16 * 1024 * 1024,
  maxIdempotencyKeysPerStream: 10_000,
  maxIdempotencyBytesPerStream: 16 * 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  keepAliveMs: 30_000,
  bodyTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
} as const;
