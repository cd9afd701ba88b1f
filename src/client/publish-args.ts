import { randomUUID } from 'node:crypto';
import { parsePublishArgs } from '../protocol/commands.js';
import type { ContentType, PublishArgs } from '../protocol/types.js';

const RELATIVE = /^\+(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `+10m`, `+2h`, `+1d` (also s and w) from now, or an ISO 8601 date-time passed through for validation. */
export function resolveReleaseAt(text: string, now: number): string {
  const relative = RELATIVE.exec(text.trim());
  if (!relative) return text.trim();
  return new Date(now + Number(relative[1]) * UNIT_MS[relative[2]!.toLowerCase()]!).toISOString();
}

/** A key unique to this post, so the client's own retries can never publish it twice. */
export function generateIdempotencyKey(): string {
  return `sp-${randomUUID()}`;
}

export interface PublishDefaults {
  streamId?: string | undefined;
  contentType: ContentType;
}

/**
 * Turns one post's fields (flags, a prompt's answers or a batch line) into
 * validated `add-stream-post` arguments, filling in the defaults and an
 * idempotency key. Throws a ProtocolError naming the bad field.
 */
export function buildPublishArgs(input: Record<string, unknown>, defaults: PublishDefaults, now: number = Date.now()): PublishArgs {
  const data: Record<string, unknown> = { ...input };
  data['streamId'] ??= defaults.streamId;
  data['contentType'] ??= defaults.contentType;
  if (typeof data['releaseAt'] === 'string') data['releaseAt'] = resolveReleaseAt(data['releaseAt'], now);
  const args = parsePublishArgs(data);
  return args.idempotencyKey === null ? { ...args, idempotencyKey: generateIdempotencyKey() } : args;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
