import { createHash } from 'node:crypto';
import type { Seed } from '../../../protocol/seed.js';
import { seedPosts } from '../seed-catalog.js';
import type { Identity, TargetSelections } from '../store.js';

/** How the keyspace holds a key: its SHA-256, never the key itself. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The seed's keys as the keyspace holds them: SHA-256 of the key → who it speaks for. */
export function seedIdentities(seed: Seed): Map<string, Identity> {
  return new Map<string, Identity>([
    ...seed.users.map((user): [string, Identity] => [keyDigest(user.readerKey), { userId: user.id, kind: 'reader' }]),
    ...seed.streams.map((stream): [string, Identity] => [
      keyDigest(stream.key),
      { userId: stream.owner, kind: 'stream', streamId: stream.id },
    ]),
  ]);
}

/** The `targets` hash as selections: `{user}|{stream}` → JSON array. */
export function selectionsOf(hash: Record<string, string>): TargetSelections {
  const selections: TargetSelections = {};
  for (const [field, json] of Object.entries(hash)) {
    const [userId = '', streamId = ''] = field.split('|');
    (selections[userId] ??= {})[streamId] = JSON.parse(json) as string[];
  }
  return selections;
}

/**
 * What the load script is given of the seed: its streams and keys as one JSON payload, then
 * each post as three arguments (stream id, post id, the post's JSON in post_json's layout,
 * the script's own: fields in its order, `hidden` last).
 */
export function seedLoadArgs(seed: Seed, identities: Map<string, Identity>, now: number): [string, ...string[]] {
  const payload = {
    streams: seed.streams.map((stream) => stream.id),
    keys: [...identities].map(([digest, identity]) => [digest, JSON.stringify(identity)]),
  };
  const posts = seedPosts(seed, now).flatMap((post) => [
    post.streamId,
    post.id,
    JSON.stringify({
      id: post.id,
      streamId: post.streamId,
      streamName: post.streamName,
      text: post.text,
      contentType: post.contentType,
      createdAt: post.createdAt,
      releaseAt: null,
      customTarget: post.customTarget,
      hidden: false,
    }),
  ]);
  return [JSON.stringify(payload), ...posts];
}
