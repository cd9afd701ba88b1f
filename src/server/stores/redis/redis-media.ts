import {
  LAPSED_KEPT_MS,
  MAX_PENDING_UPLOADS,
  MAX_STREAM_MEDIA_BYTES,
  MAX_STREAM_PENDING_UPLOADS,
  MAX_TOTAL_MEDIA_BYTES,
  tooManyUploads,
  type Claim,
  type MediaItem,
  type MediaKeeper,
  type MediaOwner,
  type NewSlot,
  type Stored,
} from '../media-keeper.js';
import { luaScript, type RedisScript } from './redis-scripts.js';

/**
 * Keys, under the service's prefix (redis-keys.ts has the rest):
 * - `up:{token}`      hash: `type`, `media` (its id), `exp` (service clock), `stream`, `rel`
 *                     (its post's releaseAt, or ""), `state` (open, uploading), `size` (bytes
 *                     of the item it holds): one upload address; expires in Redis once
 *                     lapsed long enough (its item does not)
 * - `upbytes:{token}` hash: `bytes` of an upload under way, moved to its item once checked
 * - `uppending`       sorted set: open address tokens, scored by `exp`
 * - `upopen:{stream}` sorted set: the same, for one stream
 * - `media:{id}`      hash: `bytes`, `type`, `stream`, `rel`, `size`: one uploaded item
 * - `mediabytes`      string: bytes of all media kept
 * - `mbytes:{stream}` string: bytes of one stream's media
 * - `pm:{post}`       hash: upload token → media id, of one stored post
 * - `mposts:{stream}` sorted set (by id, so oldest first): the stream's posts with media
 * Each check and the change it guards run in one script, so two instances never both take
 * an address, and the caps hold for the service. Media leave with their post: a script
 * that needs room for a stream first drops the media of its posts no longer in its history
 * (`posts:{stream}`) nor waiting for their release (`relpost`).
 */
const PRUNE = `
local function prune(stream)
  local list = P .. 'mposts:' .. stream
  for _, post in ipairs(redis.call('ZRANGE', list, 0, 15)) do
    if redis.call('HEXISTS', P .. 'posts:' .. stream, post) == 1 then return end
    -- Out of the history but waiting for its release: kept until it is released.
    if redis.call('HEXISTS', P .. 'relpost', post) == 0 then
      local media = redis.call('HGETALL', P .. 'pm:' .. post)
      for i = 1, #media, 2 do
        local item = P .. 'media:' .. media[i + 1]
        local size = tonumber(redis.call('HGET', item, 'size') or '0')
        redis.call('DEL', item, P .. 'up:' .. media[i])
        redis.call('DECRBY', P .. 'mediabytes', size)
        redis.call('DECRBY', P .. 'mbytes:' .. stream, size)
        redis.call('ZREM', P .. 'uppending', media[i])
        redis.call('ZREM', P .. 'upopen:' .. stream, media[i])
      end
      redis.call('DEL', P .. 'pm:' .. post)
      redis.call('ZREM', list, post)
    end
  end
end
`;

const RESERVE = `${PRUNE}
prune(ARGV[6])
local now = tonumber(ARGV[2])
local mine = P .. 'upopen:' .. ARGV[6]
redis.call('ZREMRANGEBYSCORE', P .. 'uppending', '-inf', now)
redis.call('ZREMRANGEBYSCORE', mine, '-inf', now)
local n = (#ARGV - 7) / 4
local pending = redis.call('ZCARD', P .. 'uppending')
if pending + n > tonumber(ARGV[3]) then return {'service', pending} end
local open = redis.call('ZCARD', mine)
if open + n > tonumber(ARGV[4]) then return {'stream', open} end
for i = 8, #ARGV, 4 do
  local key = P .. 'up:' .. ARGV[i]
  redis.call('HSET', key, 'type', ARGV[i + 1], 'media', ARGV[i + 2], 'exp', ARGV[i + 3], 'stream', ARGV[6],
    'rel', ARGV[7], 'state', 'open', 'size', 0)
  redis.call('PEXPIRE', key, ARGV[5])
  redis.call('ZADD', P .. 'uppending', ARGV[i + 3], ARGV[i])
  redis.call('ZADD', mine, ARGV[i + 3], ARGV[i])
end
redis.call('PEXPIRE', mine, ARGV[5])
return {'ok', 0}
`;

const CANCEL = `
for i = 2, #ARGV do
  local key = P .. 'up:' .. ARGV[i]
  local slot = redis.call('HMGET', key, 'stream', 'size')
  if slot[1] and tonumber(slot[2]) == 0 then
    redis.call('DEL', key)
    redis.call('ZREM', P .. 'uppending', ARGV[i])
    redis.call('ZREM', P .. 'upopen:' .. slot[1], ARGV[i])
  end
end
return 0
`;

const ATTACH = `
local post = ARGV[2]
local stream
for i = 3, #ARGV do
  local key = P .. 'up:' .. ARGV[i]
  local slot = redis.call('HMGET', key, 'media', 'stream')
  if slot[1] then
    redis.call('HSET', P .. 'pm:' .. post, ARGV[i], slot[1])
    stream = slot[2]
  end
end
if stream then redis.call('ZADD', P .. 'mposts:' .. stream, 0, post) end
return 0
`;

// Which cap taking `size` bytes in place of `old` would pass, if any.
const OVER = `${PRUNE}
local function over(stream, old, size, maxTotal, maxStream)
  local total = tonumber(redis.call('GET', P .. 'mediabytes') or '0')
  if total - old + size > maxTotal then return 'service' end
  local mine = tonumber(redis.call('GET', P .. 'mbytes:' .. stream) or '0')
  if mine - old + size > maxStream then return 'stream' end
  return nil
end
`;

// The same checks, in the same order, as MemoryMedia.claim.
const CLAIM = `${OVER}
local key = P .. 'up:' .. ARGV[2]
local stream = redis.call('HGET', key, 'stream')
if stream then prune(stream) end
local slot = redis.call('HMGET', key, 'type', 'media', 'exp', 'state', 'stream', 'size')
if not slot[1] then return {'not-found'} end
if tonumber(slot[3]) <= tonumber(ARGV[3]) then return {'lapsed'} end
if slot[4] == 'uploading' then return {'busy'} end
if slot[1] ~= ARGV[4] then return {'type', slot[1]} end
local declared = tonumber(ARGV[5])
if declared >= 0 then
  local cap = over(slot[5] or '', tonumber(slot[6] or '0'), declared, tonumber(ARGV[6]), tonumber(ARGV[7]))
  if cap then return {'full', cap} end
end
redis.call('HSET', key, 'state', 'uploading')
return {'ok', slot[1], slot[2]}
`;

const UNCLAIM = `
local key = P .. 'up:' .. ARGV[2]
if redis.call('HGET', key, 'state') == 'uploading' then redis.call('HSET', key, 'state', 'open') end
redis.call('DEL', P .. 'upbytes:' .. ARGV[2])
return 0
`;

// The bytes are in upbytes:{token}; checked, they replace the item's in one move.
const STORE = `${OVER}
local key = P .. 'up:' .. ARGV[2]
local staged = P .. 'upbytes:' .. ARGV[2]
local size = tonumber(ARGV[4])
local slot = redis.call('HMGET', key, 'type', 'state', 'stream', 'size', 'rel')
if slot[2] ~= 'uploading' then
  redis.call('DEL', staged)
  return {'gone'}
end
redis.call('HSET', key, 'state', 'open')
local stream = slot[3] or ''
local old = tonumber(slot[4] or '0')
local cap = over(stream, old, size, tonumber(ARGV[5]), tonumber(ARGV[6]))
if cap then
  redis.call('DEL', staged)
  return {'full', cap}
end
local item = P .. 'media:' .. ARGV[3]
redis.call('RENAME', staged, item)
redis.call('HSET', item, 'type', slot[1], 'stream', stream, 'rel', slot[5] or '', 'size', size)
redis.call('INCRBY', P .. 'mediabytes', size - old)
redis.call('INCRBY', P .. 'mbytes:' .. stream, size - old)
redis.call('HSET', key, 'size', size)
return {'ok'}
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
  attach: script(ATTACH),
} as const;

/** What the Redis store lends: its scripts runner (prefix first), and its client for bytes. */
export interface RedisMediaAccess {
  eval(script: RedisScript, args: (string | number)[]): Promise<unknown>;
  putBytes(key: string, bytes: Buffer): Promise<void>;
  /** The `type`, `bytes`, `stream` and `rel` fields of a hash, as bytes. */
  getItem(key: string): Promise<(Buffer | null)[]>;
  key(name: string): string;
}

/** Uploads kept in Redis: an address handed out by one instance takes uploads at any, and every instance serves them. */
export class RedisMedia implements MediaKeeper {
  constructor(private readonly redis: RedisMediaAccess) {}

  async reserve(slots: readonly NewSlot[], owner: MediaOwner, now: number): Promise<void> {
    const args = slots.flatMap((slot) => [slot.token, slot.type, slot.mediaId, slot.expiresAt]);
    const ttl = Math.max(...slots.map((slot) => slot.expiresAt)) - now + LAPSED_KEPT_MS;
    const [cap, open] = (await this.redis.eval(SCRIPTS.reserve, [
      now,
      MAX_PENDING_UPLOADS,
      MAX_STREAM_PENDING_UPLOADS,
      ttl,
      owner.streamId,
      owner.releaseAt ?? '',
      ...args,
    ])) as [string, number];
    if (cap !== 'ok') throw tooManyUploads(cap as 'service' | 'stream', open, owner.streamId);
  }

  async cancel(tokens: readonly string[]): Promise<void> {
    await this.redis.eval(SCRIPTS.cancel, [...tokens]);
  }

  async attach(tokens: readonly string[], postId: string): Promise<void> {
    await this.redis.eval(SCRIPTS.attach, [postId, ...tokens]);
  }

  async claim(token: string, now: number, type: string, declaredBytes: number): Promise<Claim> {
    const reply = (await this.redis.eval(SCRIPTS.claim, [
      token,
      now,
      type,
      declaredBytes,
      MAX_TOTAL_MEDIA_BYTES,
      MAX_STREAM_MEDIA_BYTES,
    ])) as string[];
    const [why, first, mediaId] = reply;
    if (why === 'ok') return { ok: true, type: first!, mediaId: mediaId! };
    if (why === 'type') return { ok: false, why, type: first! };
    if (why === 'full') return { ok: false, why, cap: first as 'service' | 'stream' };
    return { ok: false, why: why as 'not-found' | 'lapsed' | 'busy' };
  }

  async unclaim(token: string): Promise<void> {
    await this.redis.eval(SCRIPTS.unclaim, [token]);
  }

  async store(token: string, mediaId: string, bytes: Buffer): Promise<Stored> {
    // Staged under the address; the script then moves them to the item or drops them.
    await this.redis.putBytes(this.redis.key(`upbytes:${token}`), bytes);
    const [why, cap] = (await this.redis.eval(SCRIPTS.store, [
      token,
      mediaId,
      bytes.length,
      MAX_TOTAL_MEDIA_BYTES,
      MAX_STREAM_MEDIA_BYTES,
    ])) as string[];
    if (why === 'ok') return { ok: true };
    if (why === 'full') return { ok: false, why, cap: cap as 'service' | 'stream' };
    return { ok: false, why: 'gone' };
  }

  async item(mediaId: string): Promise<MediaItem | undefined> {
    const [type, bytes, stream, rel] = await this.redis.getItem(this.redis.key(`media:${mediaId}`));
    if (!type || !bytes) return undefined;
    // An item kept before items named their stream was never held back: it still is not.
    const releaseAt = !rel || rel.length === 0 ? null : Number(rel.toString('utf8'));
    return { type: type.toString('utf8'), bytes, streamId: stream?.toString('utf8') ?? '', releaseAt };
  }
}
