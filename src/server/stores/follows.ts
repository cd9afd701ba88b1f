import type { StreamRecord, UserRecord } from './store.js';

// The follow rule lives here, not in service/ where the rest of who-sees-what is
// (service/visibility.ts re-exports it): the seed catalog answers `streamsOf` with it, and
// stores/ imports nothing from service/.

const followSets = new WeakMap<UserRecord, ReadonlySet<string>>();

/**
 * The streams a user follows, as a set: built once per user record (follows never change while
 * serving; a reset makes new records), since a reader may follow hundreds and every subscribe asks.
 */
export function followedBy(user: UserRecord): ReadonlySet<string> {
  let followed = followSets.get(user);
  if (followed === undefined) {
    followed = new Set(user.follows);
    followSets.set(user, followed);
  }
  return followed;
}

/** The user follows or owns the stream. */
export function follows(user: UserRecord, stream: StreamRecord): boolean {
  return stream.owner === user.id || followedBy(user).has(stream.id);
}
