import {
  LAPSED_KEPT_MS,
  MAX_PENDING_UPLOADS,
  MAX_TOTAL_MEDIA_BYTES,
  tooManyUploads,
  type Claim,
  type MediaItem,
  type MediaKeeper,
  type NewSlot,
} from './media-keeper.js';
import { luaScript, type RedisScript } from './redis-scripts.js';

/**
 * Keys, under the service's prefix (redis-keys.ts has the rest):
 * - `up:{token}`    hash: `type`, `media` (its id), `exp` (service clock), `state` (pending,
 *                   uploading, done): one upload address; expires in Redis once lapsed long
 *                   enough, kept while its item is
 * - `uppending`     sorted set: address tokens still waiting for their upload, scored by `exp`
 * - `media:{id}`    hash: `bytes` (written first), `type` (once the upload is complete)
 * - `mediabytes`    string: bytes of all media kept
 * Each check and the change it guards run in one script, so two instances never both take
 * an address, and the caps hold for the service.
 */
const RESERVE = `
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', P .. 'uppending', '-inf', now)
local pending = redis.call('ZCARD', P .. 'uppending')
if pending + (#ARGV - 4) / 4 > tonumber(ARGV[3]) then return pending end
for i = 5, #ARGV, 4 do
  local key = P .. 'up:' .. ARGV[i]
  redis.call('HSET', key, 'type', ARGV[i + 1], 'media', ARGV[i + 2], 'exp', ARGV[i + 3], 'state', 'pending')
  redis.call('PEXPIRE', key, ARGV[4])
  redis.call('ZADD', P .. 'uppending', ARGV[i + 3], ARGV[i])
end
return -1
`;

const CANCEL = `
for i = 2, #ARGV do
  if redis.call('HGET', P .. 'up:' .. ARGV[i], 'state') == 'pending' then
    redis.call('DEL', P .. 'up:' .. ARGV[i])
    redis.call('ZREM', P .. 'uppending', ARGV[i])
  end
end
return 0
`;

// The same checks, in the same order, as MemoryMedia.claim.
const CLAIM = `
local key = P .. 'up:' .. ARGV[2]
local slot = redis.call('HMGET', key, 'type', 'media', 'exp', 'state')
if not slot[1] then return {'not-found'} end
if slot[4] == 'done' then
  if redis.call('HEXISTS', P .. 'media:' .. slot[2], 'type') == 1 then return {'used'} end
  return {'lapsed'}
end
if tonumber(slot[3]) <= tonumber(ARGV[3]) then return {'lapsed'} end
if slot[4] == 'uploading' then return {'busy'} end
if slot[1] ~= ARGV[4] then return {'type', slot[1]} end
local declared = tonumber(ARGV[5])
local kept = tonumber(redis.call('GET', P .. 'mediabytes') or '0')
if declared >= 0 and kept + declared > tonumber(ARGV[6]) then return {'full'} end
redis.call('HSET', key, 'state', 'uploading')
return {'ok', slot[1], slot[2]}
`;

const UNCLAIM = `
local key = P .. 'up:' .. ARGV[2]
if redis.call('HGET', key, 'state') == 'uploading' then redis.call('HSET', key, 'state', 'pending') end
return 0
`;

// The bytes are in media:{id} already; the item exists once it has its type.
const STORE = `
local key = P .. 'up:' .. ARGV[2]
local item = P .. 'media:' .. ARGV[3]
local size = tonumber(ARGV[4])
local slot = redis.call('HMGET', key, 'type', 'state')
if slot[2] ~= 'uploading' then
  redis.call('DEL', item)
  return 0
end
if tonumber(redis.call('GET', P .. 'mediabytes') or '0') + size > tonumber(ARGV[5]) then
  redis.call('DEL', item)
  redis.call('HSET', key, 'state', 'pending')
  return 0
end
redis.call('INCRBY', P .. 'mediabytes', size)
redis.call('HSET', item, 'type', slot[1])
redis.call('HSET', key, 'state', 'done')
redis.call('PERSIST', key)
redis.call('ZREM', P .. 'uppending', ARGV[2])
return 1
`;

function script(source: string): RedisScript {
  return luaScript(`local P = ARGV[1]\n${source}`);
}

const SCRIPTS = {
  reserve: script(RESERVE),
  cancel: script(CANCEL),
  claim: script(CLAIM),
  unclaim: script(UNCLAIM),
  store: script(STORE),
} as const;

/** What the Redis store lends: its scripts runner (prefix first), and its client for bytes. */
export interface RedisMediaAccess {
  eval(script: RedisScript, args: (string | number)[]): Promise<unknown>;
  putBytes(key: string, bytes: Buffer): Promise<void>;
  /** The `type` and `bytes` fields of a hash, as bytes. */
  getItem(key: string): Promise<[Buffer | null, Buffer | null]>;
  key(name: string): string;
}

/** Uploads kept in Redis: an address handed out by one instance takes its upload at any, and every instance serves it. */
export class RedisMedia implements MediaKeeper {
  constructor(private readonly redis: RedisMediaAccess) {}

  async reserve(slots: readonly NewSlot[], now: number): Promise<void> {
    const args = slots.flatMap((slot) => [slot.token, slot.type, slot.mediaId, slot.expiresAt]);
    const ttl = Math.max(...slots.map((slot) => slot.expiresAt)) - now + LAPSED_KEPT_MS;
    const pending = (await this.redis.eval(SCRIPTS.reserve, [now, MAX_PENDING_UPLOADS, ttl, ...args])) as number;
    if (pending >= 0) throw tooManyUploads(pending);
  }

  async cancel(tokens: readonly string[]): Promise<void> {
    await this.redis.eval(SCRIPTS.cancel, [...tokens]);
  }

  async claim(token: string, now: number, type: string, declaredBytes: number): Promise<Claim> {
    const reply = (await this.redis.eval(SCRIPTS.claim, [
      token,
      now,
      type,
      declaredBytes,
      MAX_TOTAL_MEDIA_BYTES,
    ])) as string[];
    const [why, slotType, mediaId] = reply;
    if (why === 'ok') return { ok: true, type: slotType!, mediaId: mediaId! };
    if (why === 'type') return { ok: false, why, type: slotType! };
    return { ok: false, why: why as 'not-found' | 'used' | 'lapsed' | 'busy' | 'full' };
  }

  async unclaim(token: string): Promise<void> {
    await this.redis.eval(SCRIPTS.unclaim, [token]);
  }

  async store(token: string, mediaId: string, bytes: Buffer): Promise<boolean> {
    // Bytes first, under an id nobody is served yet; the script then completes or drops them.
    await this.redis.putBytes(this.redis.key(`media:${mediaId}`), bytes);
    return (await this.redis.eval(SCRIPTS.store, [token, mediaId, bytes.length, MAX_TOTAL_MEDIA_BYTES])) === 1;
  }

  async item(mediaId: string): Promise<MediaItem | undefined> {
    const [type, bytes] = await this.redis.getItem(this.redis.key(`media:${mediaId}`));
    return type === null || bytes === null ? undefined : { type: type.toString('utf8'), bytes };
  }
}
