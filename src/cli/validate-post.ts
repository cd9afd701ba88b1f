import { parsePublishArgs } from '../protocol/commands.js';
import type { PublishArgs } from '../protocol/types.js';
import { resolveReleaseAt, type PublishDefaults } from './release-at.js';

/**
 * Turns one post's fields (flags, a prompt's answers or a batch line) into
 * validated `add-stream-post` arguments, filling in the defaults (the
 * idempotency key is added when sending: see withIdempotencyKey). Throws a
 * ProtocolError naming the bad field.
 */
export function buildPublishArgs(
  input: Record<string, unknown>,
  defaults: PublishDefaults,
  now: number = Date.now(),
): PublishArgs {
  const data: Record<string, unknown> = { ...input };
  data['streamId'] ??= defaults.streamId;
  data['contentType'] ??= defaults.contentType;
  if (typeof data['releaseAt'] === 'string') data['releaseAt'] = resolveReleaseAt(data['releaseAt'], now);
  return parsePublishArgs(data);
}
