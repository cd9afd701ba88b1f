/** Defaults of `serve`, apart from the server so the CLI can show them without loading it. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8787,
  idempotencyWindowMs: 10 * 60_000,
  rateLimit: 200,
  maxBufferedBytes: 8 * 1024 * 1024,
  keepAliveMs: 30_000,
} as const;
