// What a stream may hold until a release or the end of an idempotency window, once for both
// stores: the memory store applies these rules in TypeScript (holdingsRefusal), the Redis
// store's publish script has its checks written from HOLDING_RULES (redis-scripts.ts), and
// both word a refusal with holdingsError. Written twice, because the script must count and
// check inside Redis in one atomic run (a check in this process would race another
// instance's publish): the bookkeeping (maps here, hashes there, each with its own expiry
// sweep), a key's lapse (`expiresAt > now` keeps it here; the script drops scores up to
// `now`), and a text's size (Buffer.byteLength here, Lua's # there: both UTF-8 bytes).
// test/stores/store-contract.test.ts holds the two stores to the same answers.
import { ProtocolError } from '../../protocol/errors.js';
import { PUBLISH_COMMAND } from '../../protocol/types.js';

/** Per-stream caps every store enforces (PROTOCOL.md B4); 0 or undefined = no cap. */
export interface HoldingsCaps {
  maxPendingReleases?: number;
  maxPendingReleaseBytes?: number;
  maxIdempotencyKeys?: number;
  /** Text bytes of the posts those keys hold on to (a key keeps its post for its duplicate's ack). */
  maxIdempotencyBytes?: number;
}

/** What a stream holds of one kind: how many, and their posts' text in UTF-8 bytes. */
export interface Held {
  count: number;
  bytes: number;
}

/**
 * The caps in the order they are checked (the first one passed is the refusal). `holder`: a
 * hidden post is held by `releases` until its release, a keyed one by `keys` until its window
 * ends; `measure`: a `count` cap refuses a post when the holder already holds that many, a
 * `bytes` cap when the post's text would take the holder past it.
 */
export const HOLDING_RULES = [
  { kind: 'releases', cap: 'maxPendingReleases', holder: 'releases', measure: 'count' },
  { kind: 'releases-bytes', cap: 'maxPendingReleaseBytes', holder: 'releases', measure: 'bytes' },
  { kind: 'keys', cap: 'maxIdempotencyKeys', holder: 'keys', measure: 'count' },
  { kind: 'keys-bytes', cap: 'maxIdempotencyBytes', holder: 'keys', measure: 'bytes' },
] as const;

export type HoldingKind = (typeof HOLDING_RULES)[number]['kind'];
export type Holder = (typeof HOLDING_RULES)[number]['holder'];

/** The caps' values in HOLDING_RULES order, 0 = none. */
export function capsInOrder(caps: HoldingsCaps): number[] {
  return HOLDING_RULES.map((rule) => caps[rule.cap] ?? 0);
}

/**
 * Whether a publish with this key is deduplicated (and its key held): only within a window.
 * With a window of 0 a key deduplicates nothing and holds nothing, so it counts against no cap.
 * A key lapses once the service clock reaches the end of its window (`expiresAt <= now`).
 */
export function holdsKey(idempotencyKey: string | null, windowMs: number): boolean {
  return idempotencyKey !== null && windowMs > 0;
}

/**
 * The first cap (`caps` as capsInOrder gives them) a new post would take its stream past,
 * before anything is stored; undefined when it fits.
 */
export function holdingsRefusal(
  caps: readonly number[],
  held: Record<Holder, Held>,
  post: { hidden: boolean; keyed: boolean; textBytes: number },
): { kind: HoldingKind; max: number } | undefined {
  for (const [index, rule] of HOLDING_RULES.entries()) {
    const max = caps[index] ?? 0;
    if (max === 0 || !(rule.holder === 'releases' ? post.hidden : post.keyed)) continue;
    const holding = held[rule.holder];
    const over = rule.measure === 'count' ? holding.count >= max : holding.bytes + post.textBytes > max;
    if (over) return { kind: rule.kind, max };
  }
  return undefined;
}

/** The refusal of a post that would take a stream past one of its caps. */
export function holdingsError(kind: HoldingKind, streamId: string, max: number): ProtocolError {
  const messages: Record<HoldingKind, string> = {
    releases: `stream "${streamId}" already has ${max} posts waiting for their releaseAt, the most the server allows`,
    'releases-bytes': `the posts of stream "${streamId}" waiting for their releaseAt would exceed ${max} bytes, the most the server allows`,
    keys: `stream "${streamId}" already has ${max} idempotency keys within the window, the most the server allows; retry later`,
    'keys-bytes': `the posts held for stream "${streamId}"'s idempotency keys would exceed ${max} bytes, the most the server allows; retry later`,
  };
  return new ProtocolError('limit-exceeded', messages[kind], PUBLISH_COMMAND);
}
