import { createHash } from 'node:crypto';
import { MAX_LAST_POSTS } from '../../../protocol/limits.js';
import { HOLDING_RULES } from '../holding-rules.js';

/**
 * Every rule that must hold across instances is one of these scripts: Redis runs a
 * script alone, so a check and the change it guards can never interleave with another
 * instance's. Keys are built from the prefix inside the scripts, so a keyspace lives on
 * one Redis node (Redis Cluster is not supported).
 */
const HELPERS = `
local P = ARGV[1]
local ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

-- The ULID after last: ids issued by several instances still grow in storage order.
local function next_id(last)
  local chars = {}
  for i = 1, #last do chars[i] = last:sub(i, i) end
  for i = #chars, 1, -1 do
    local at = ALPHABET:find(chars[i], 1, true)
    if at < #ALPHABET then
      chars[i] = ALPHABET:sub(at + 1, at + 1)
      return table.concat(chars)
    end
    chars[i] = '0'
  end
  return table.concat(chars)
end

local function take_id(candidate)
  local last = redis.call('GET', P .. 'lastid')
  local id = candidate
  if last and id <= last then id = next_id(last) end
  redis.call('SET', P .. 'lastid', id)
  return id
end

-- History entries are "seq|id": the event that created the post, so a subscriber's
-- history can stop where its subscription began.
local function append(sid, id, json, seq)
  redis.call('RPUSH', P .. 'h:' .. sid, seq .. '|' .. id)
  redis.call('HSET', P .. 'posts:' .. sid, id, json)
  local extra = redis.call('LLEN', P .. 'h:' .. sid) - ${MAX_LAST_POSTS}
  if extra > 0 then
    for _, entry in ipairs(redis.call('LPOP', P .. 'h:' .. sid, extra)) do
      redis.call('HDEL', P .. 'posts:' .. sid, entry:match('|(.+)$'))
    end
  end
end

-- Built by hand, times as the decimal strings they came as: cjson would round them to
-- 14 digits. \`hidden\` comes last, so a release can flip it without decoding.
local function post_json(p)
  return '{"id":' .. cjson.encode(p.id) .. ',"streamId":' .. cjson.encode(p.streamId)
    .. ',"streamName":' .. cjson.encode(p.streamName) .. ',"text":' .. cjson.encode(p.text)
    .. ',"contentType":' .. cjson.encode(p.contentType) .. ',"createdAt":' .. p.createdAt
    .. ',"releaseAt":' .. (p.releaseAt or 'null')
    .. ',"customTarget":' .. (p.customTarget and cjson.encode(p.customTarget) or 'null')
    .. (p.metadata and (',"metadata":' .. p.metadata) or '')
    .. ',"hidden":' .. tostring(p.hidden) .. '}'
end

local function unhide(json)
  if json:sub(-14) == '"hidden":true}' then return json:sub(1, -15) .. '"hidden":false}' end
  return json
end

local function next_seq()
  return redis.call('INCR', P .. 'seq')
end

-- The marker of a loaded keyspace: the seed's digest and the event counter. Either gone
-- (FLUSHALL, a restart without persistence, eviction) means the store lost its data.
local function lost()
  return redis.call('EXISTS', P .. 'seed', P .. 'seq') < 2
end

-- Nil when the keyspace holds this seed; else why a change must not run: 'lost' or 'stale'.
-- One command, as the digest check alone was: a publish costs no more for it.
local function refusal_of(digest)
  local marker = redis.call('MGET', P .. 'seed', P .. 'seq')
  if not marker[1] or not marker[2] then return {'lost'} end
  if marker[1] ~= digest then return {'stale'} end
end

local function announce(seq, kind, body)
  redis.call('PUBLISH', P .. 'events', '{"s":' .. seq .. ',"t":"' .. kind .. '"' .. body .. '}')
  return seq
end
`;

/**
 * ARGV: prefix, seed digest, mode (start | replace | reset), the new load's epoch (a random id
 * every instance compares, to tell a counter that went backwards from an event it saw), the
 * loading instance's clock offset (kept by a load after a loss: every instance still has it),
 * payload JSON {streams, keys}, then each seed post as three arguments: stream id, post id,
 * the post's JSON as post_json writes it. A seed of large posts is not decoded and encoded
 * again inside the script. Returns the reset event's number, whether it replaced a keyspace
 * in use, and the clock offset it announced.
 */
const LOAD_SEED = `
local digest, mode, epoch, offset = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local current = redis.call('GET', P .. 'seed')
if mode == 'start' then
  if current == digest and not lost() then return {'present'} end
  if current and current ~= digest then return {'mismatch'} end
elseif mode == 'reset' and current and current ~= digest then
  return {'mismatch'}
end
-- Something was here (a counter, another seed) that this load replaces: every instance must
-- drop what it remembers of it, even when the counter did not go backwards.
local replaced = mode ~= 'reset' and redis.call('EXISTS', P .. 'seq') == 1
local payload = cjson.decode(ARGV[6])
-- The seed's streams too: an evicted set of streams must not leave their histories behind.
local cleared = redis.call('SMEMBERS', P .. 'streams')
for _, sid in ipairs(payload.streams) do table.insert(cleared, sid) end
for _, sid in ipairs(cleared) do
  redis.call('DEL', P .. 'h:' .. sid, P .. 'posts:' .. sid, P .. 'hold:' .. sid, P .. 'idem:' .. sid, P .. 'idemx:' .. sid)
end
redis.call('DEL', P .. 'rel', P .. 'relpost', P .. 'streams', P .. 'targets')
-- The keys are the seed's (the digest says so): written again, in case some were evicted.
redis.call('DEL', P .. 'keys')
for _, pair in ipairs(payload.keys) do redis.call('HSET', P .. 'keys', pair[1], pair[2]) end
if mode ~= 'reset' then redis.call('SET', P .. 'clock', offset) end
for _, sid in ipairs(payload.streams) do redis.call('SADD', P .. 'streams', sid) end
-- Seed post ids are the seed's own (the same on every load) and sort before every id issued.
for i = 7, #ARGV, 3 do append(ARGV[i], ARGV[i + 1], ARGV[i + 2], 0) end
redis.call('SET', P .. 'count', (#ARGV - 6) / 3)
redis.call('SET', P .. 'seed', digest)
redis.call('SET', P .. 'epoch', epoch)
offset = tonumber(redis.call('GET', P .. 'clock') or '0')
local seq = next_seq()
announce(seq, 'reset', ',"e":' .. cjson.encode(epoch) .. ',"o":' .. offset .. ',"l":' .. tostring(replaced))
return {'loaded', seq, replaced and 1 or 0, offset}
`;

/** Where the publish script's caps start among its ARGV, in HOLDING_RULES order. */
const CAPS_ARGV = 14;
/** Each holder's hash, and which posts it holds: the same as the memory store's (holding-rules.ts). */
const HOLDERS = { releases: { hash: 'hold', holds: 'hidden' }, keys: { hash: 'idem', holds: 'keyed' } } as const;

/**
 * The caps, written from HOLDING_RULES in their order: a post refused by the first it would
 * pass, before the script changes anything. Counts and bytes are the fields `n` and `bytes`
 * of the holder's hash; #text is the text's length in bytes, as the memory store counts it.
 */
const CAP_CHECKS = HOLDING_RULES.map((rule, index) => {
  const { hash, holds } = HOLDERS[rule.holder];
  const max = `tonumber(ARGV[${CAPS_ARGV + index}])`;
  const field = rule.measure === 'count' ? 'n' : 'bytes';
  const held = `tonumber(redis.call('HGET', ${hash}, '${field}') or '0')`;
  const over = rule.measure === 'count' ? `${held} >= ${max}` : `${held} + #text > ${max}`;
  return `if ${holds} and ${max} > 0 and ${over} then return {'limit', '${rule.kind}', ${max}} end`;
}).join('\n');

/** Where the publish script's metadata and deadline are among its ARGV, after the caps. */
const METADATA_ARGV = CAPS_ARGV + HOLDING_RULES.length;

/**
 * ARGV: prefix, seed digest, stream id, stream name, text, content type, now,
 * releaseAt ('' = none), customTarget ('' = none), keyed (0/1), idempotency key,
 * window ms, candidate id, then the caps (0 = none) in HOLDING_RULES order from CAPS_ARGV,
 * then the post's metadata as JSON ('' = none), then the deadline (ms on Redis's clock), then
 * the time it must not run before (0 = any; a publish sent again while its first sending may
 * still run). Run past its deadline (Redis paused or busy meanwhile), it changes nothing: the
 * service, which told the publisher nothing while it waited, can then say truly that nothing
 * was stored.
 */
const PUBLISH = `
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now_ms > tonumber(ARGV[${METADATA_ARGV + 1}]) then return {'expired'} end
if now_ms <= tonumber(ARGV[${METADATA_ARGV + 2}]) then return {'early'} end
local refused = refusal_of(ARGV[2])
if refused then return refused end
local sid, now, key = ARGV[3], tonumber(ARGV[7]), ARGV[11]
local keyed = ARGV[10] == '1'
local window = tonumber(ARGV[12])
local idem, idemx, hold = P .. 'idem:' .. sid, P .. 'idemx:' .. sid, P .. 'hold:' .. sid
if keyed then
  local lapsed = redis.call('ZRANGEBYSCORE', idemx, '-inf', now)
  for _, old in ipairs(lapsed) do
    local bytes = tonumber(redis.call('HGET', idem, 'b:' .. old) or '0')
    redis.call('HDEL', idem, 'k:' .. old, 'b:' .. old)
    redis.call('HINCRBY', idem, 'n', -1)
    redis.call('HINCRBY', idem, 'bytes', -bytes)
  end
  if #lapsed > 0 then redis.call('ZREMRANGEBYSCORE', idemx, '-inf', now) end
  local earlier = redis.call('HGET', idem, 'k:' .. key)
  if earlier then
    -- The post as it is now: released since, or still hidden.
    local id = cjson.decode(earlier).id
    local current = redis.call('HGET', P .. 'posts:' .. sid, id) or redis.call('HGET', P .. 'relpost', id)
    return {'duplicate', current or unhide(earlier)}
  end
end
local text = ARGV[5]
local release_at = ARGV[8] ~= '' and ARGV[8] or nil
local hidden = release_at ~= nil and tonumber(release_at) > now
${CAP_CHECKS}
local post = {
  id = take_id(ARGV[13]), streamId = sid, streamName = ARGV[4], text = text, contentType = ARGV[6],
  createdAt = ARGV[7], releaseAt = release_at, customTarget = ARGV[9] ~= '' and ARGV[9] or nil, hidden = hidden,
  metadata = ARGV[${METADATA_ARGV}] ~= '' and ARGV[${METADATA_ARGV}] or nil,
}
local json = post_json(post)
local seq = next_seq()
append(sid, post.id, json, seq)
redis.call('INCR', P .. 'count')
if keyed then
  redis.call('HSET', idem, 'k:' .. key, json, 'b:' .. key, #text)
  redis.call('HINCRBY', idem, 'n', 1)
  redis.call('HINCRBY', idem, 'bytes', #text)
  redis.call('ZADD', idemx, now + window, key)
  -- Lapsing is measured on the service clock above; this only clears what an idle
  -- stream left behind, once the window has passed in real time too.
  redis.call('PEXPIRE', idem, window + 60000)
  redis.call('PEXPIRE', idemx, window + 60000)
end
if hidden then
  redis.call('ZADD', P .. 'rel', release_at, post.id)
  redis.call('HSET', P .. 'relpost', post.id, json)
  redis.call('HINCRBY', hold, 'n', 1)
  redis.call('HINCRBY', hold, 'bytes', #text)
end
return {'created', json, announce(seq, 'created', ',"p":' .. json)}
`;

/**
 * ARGV: prefix, now, batch size. Claims due releases: each is taken by exactly one caller.
 * The last `released` event carries the earliest release still pending (`n`: [time, id] or
 * null), so every instance knows when the next claim is due without asking.
 */
const RELEASE_DUE = `
if lost() then return {'lost'} end
local due = redis.call('ZRANGEBYSCORE', P .. 'rel', '-inf', tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
local released = {}
for _, id in ipairs(due) do
  redis.call('ZREM', P .. 'rel', id)
  local json = redis.call('HGET', P .. 'relpost', id)
  if json then
    redis.call('HDEL', P .. 'relpost', id)
    local post = cjson.decode(json)
    local shown = unhide(json)
    local sid = post.streamId
    if redis.call('HEXISTS', P .. 'posts:' .. sid, id) == 1 then redis.call('HSET', P .. 'posts:' .. sid, id, shown) end
    redis.call('HINCRBY', P .. 'hold:' .. sid, 'n', -1)
    redis.call('HINCRBY', P .. 'hold:' .. sid, 'bytes', -#post.text)
    table.insert(released, shown)
  end
end
local first = redis.call('ZRANGE', P .. 'rel', 0, 0, 'WITHSCORES')
local following = 'null'
if first[1] then following = '[' .. first[2] .. ',' .. cjson.encode(first[1]) .. ']' end
for i, json in ipairs(released) do
  announce(next_seq(), 'released', ',"p":' .. json .. (i == #released and (',"n":' .. following) or ''))
end
return {#due, tonumber(redis.call('GET', P .. 'seq') or '0'), first[2] or '', first[1] or ''}
`;

/**
 * ARGV: prefix, stream id, limit, as-of event ('' = now). The last posts created by that
 * event, as they are now, and the event number they are current at, read together.
 */
const RECENT = `
local limit, as_of = tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = {}
local entries = redis.call('LRANGE', P .. 'h:' .. ARGV[2], 0, -1)
for i = #entries, 1, -1 do
  if #ids == limit then break end
  local created, id = entries[i]:match('^(%d+)|(.+)$')
  if as_of == nil or tonumber(created) <= as_of then table.insert(ids, 1, id) end
end
local seq = tonumber(redis.call('GET', P .. 'seq') or '0')
if #ids == 0 then return {seq} end
local posts = redis.call('HMGET', P .. 'posts:' .. ARGV[2], unpack(ids))
table.insert(posts, 1, seq)
return posts
`;

/**
 * ARGV: prefix, seed digest, user id, stream id, targets as a JSON array. Every instance
 * applies the new selection from the event, in the feed's order.
 */
const SET_TARGETS = `
local refused = refusal_of(ARGV[2])
if refused then return refused end
redis.call('HSET', P .. 'targets', ARGV[3] .. '|' .. ARGV[4], ARGV[5])
return {'set', announce(next_seq(), 'targets', ',"u":' .. cjson.encode(ARGV[3]) .. ',"k":' .. cjson.encode(ARGV[4]) .. ',"v":' .. ARGV[5])}
`;

/** ARGV: prefix, ms, the advancing instance's id (it claims the releases this makes due). */
const ADVANCE_CLOCK = `
if lost() then return {'lost'} end
local offset = redis.call('INCRBY', P .. 'clock', tonumber(ARGV[2]))
return {offset, announce(next_seq(), 'clock', ',"o":' .. offset .. ',"i":' .. cjson.encode(ARGV[3]))}
`;

/**
 * ARGV: prefix, seed digest. Whether the store is usable: the marker is there, and a write
 * goes through (refused with OOM while Redis is full under \`noeviction\`).
 */
const PROBE = `
local refused = refusal_of(ARGV[2])
if refused then return refused end
redis.call('SET', P .. 'probe', '1')
return {'ok'}
`;

/** ARGV: prefix, now. */
const STATS = `
local keys = 0
for _, sid in ipairs(redis.call('SMEMBERS', P .. 'streams')) do
  keys = keys + redis.call('ZCOUNT', P .. 'idemx:' .. sid, '(' .. ARGV[2], '+inf')
end
return {tonumber(redis.call('GET', P .. 'count') or '0'), redis.call('ZCARD', P .. 'rel'), keys}
`;

export interface RedisScript {
  readonly source: string;
  readonly sha: string;
}

/**
 * A script as Redis runs it. Declared (Redis 7's shebang) as one that writes, Redis refuses it
 * as a whole while it is out of memory under `noeviction`; an undeclared one is refused only at
 * its first write that needs memory, after the writes before it were done (a release taken
 * off the schedule and never announced). `writes: false` lets it read while Redis is full.
 */
export function luaScript(body: string, writes = true): RedisScript {
  const source = `#!lua${writes ? '' : ' flags=no-writes'}\n${body}`;
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

function script(body: string, writes = true): RedisScript {
  return luaScript(HELPERS + body, writes);
}

export const SCRIPTS = {
  loadSeed: script(LOAD_SEED),
  publish: script(PUBLISH),
  releaseDue: script(RELEASE_DUE),
  recent: script(RECENT, false),
  advanceClock: script(ADVANCE_CLOCK),
  stats: script(STATS, false),
  setTargets: script(SET_TARGETS),
  probe: script(PROBE),
} as const;
