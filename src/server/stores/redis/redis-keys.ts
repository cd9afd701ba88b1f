/**
 * The Redis key layout of one service, every key under its prefix (default
 * `stream-posts:`) so several services can share one Redis:
 *
 * - `seed`            string: digest of the loaded seed (keys inside it digested first)
 * - `keys`            hash: SHA-256 of an API key (hex) → identity JSON; never the key itself
 * - `streams`         set: ids of the seed's streams (what a reset must clear)
 * - `h:{stream}`      list: `{event seq}|{post id}` of the stream's last 100 posts, oldest first
 * - `posts:{stream}`  hash: post id → post JSON, for the ids in `h:{stream}`
 * - `rel`             sorted set: hidden post id, scored by its releaseAt (service clock)
 * - `relpost`         hash: hidden post id → post JSON, until its release
 * - `hold:{stream}`   hash: `n`, `bytes` of the stream's posts waiting for release
 * - `idem:{stream}`   hash: `n`, `bytes`, `k:{idempotencyKey}` → post JSON, `b:{key}` → text bytes
 * - `idemx:{stream}`  sorted set: idempotency key, scored by when it lapses (service clock)
 * - `count`           string: posts stored since the seed was loaded
 * - `lastid`          string: the last post id issued, so ids grow in storage order across instances
 * - `seq`             string: number of the last event published
 * - `clock`           string: the shared clock offset in ms (`/_admin/clock`)
 * - `targets`         hash: `{user}|{stream}` → JSON array of the targets the user selected
 *                     since the seed was loaded (POST /v1/streams/{id}/custom-targets)
 * - `events`          pub/sub channel: `{"s":seq,"t":"created"|"released"|"clock"|"reset"|"targets",…}`
 * - `epoch`           string: a random id of the last load of the seed, carried by its `reset`
 *                     event: an instance tells a counter that went back (a loss) from an event it saw
 * - `probe`           string: written by the readiness check while Redis refuses writes
 * - `up:{token}`, `upbytes:{token}`, `uppending`, `upopen:{stream}`, `media:{id}`, `mediabytes`,
 *   `mbytes:{stream}`, `pm:{post}`, `mposts:{stream}`: uploaded media, their caps and their
 *   posts (redis-media.ts)
 */
export const KEY_NAMES = [
  'seed',
  'keys',
  'streams',
  'rel',
  'relpost',
  'count',
  'lastid',
  'seq',
  'clock',
  'targets',
  'events',
  'epoch',
  'probe',
] as const;

export const DEFAULT_REDIS_PREFIX = 'stream-posts:';

export function eventsChannel(prefix: string): string {
  return `${prefix}events`;
}

/** A `redis://` URL without its password, for output and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = 'redacted';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':redacted@');
  }
}

/** The password of a `redis://` URL, to keep it out of log lines. */
export function redisUrlPassword(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}

/** Checks a store URL: `redis://` or `rediss://` with a host, an optional numeric database. */
export function checkRedisUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`store must be 'memory' or a redis://HOST:PORT[/DB] URL, got ${redactRedisUrl(url)}`);
  }
  const database = parsed.pathname.replace(/^\//, '');
  if (
    (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') ||
    parsed.hostname === '' ||
    !/^\d*$/.test(database)
  ) {
    throw new TypeError(`store must be 'memory' or a redis://HOST:PORT[/DB] URL, got ${redactRedisUrl(url)}`);
  }
}
