/**
 * bench/redis-store — what a post costs the Redis store: Redis memory per post and per
 * pending (scheduled, hidden) release, and Redis commands and bytes per publish.
 *
 * A redis-server of the benchmark's own (no persistence) and one `stream-posts serve
 * --store` on it, seeded with `streams` streams; one publisher connection per stream key.
 * After the seed is loaded and the server is idle, used_memory (INFO memory) and the
 * command and byte counters (INFO commandstats, INFO stats) are read; then `posts`
 * immediate posts (round-robin over the streams, one in flight per stream, fewer per
 * stream than the 100-post history keeps, so none is trimmed) and the counters read again;
 * then `posts` hidden posts released a day ahead, and read again. Each phase's deltas
 * divided by its posts give the figures. Commands are as Redis counts them, those a script
 * runs included (an EVALSHA and the commands inside it all count).
 *
 * The baseline, measured in the same run, is the size of the post itself: the
 * `stream.post.created` frame subscribers get for it, so "memory per post" reads as a
 * multiple of the data it holds.
 *
 * Flags (through bench/run.mjs): --posts (5000), --streams (100), --content-bytes (200).
 */
import { startRedis, perUnit } from './lib/redis.mjs';
import { readFlags, requireWhole } from './lib/config.mjs';
import { startStreamPosts } from './lib/processes.mjs';
import { openPublisher } from './lib/publisher.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, round } from './lib/stats.mjs';

const DEFAULTS = { posts: 5000, streams: 100, contentBytes: 200 };
/** Posts a stream's history keeps; a phase stays below it per stream so nothing is trimmed. */
const HISTORY = 100;

const pad = (value) => String(value).padStart(3, '0');
const streamId = (s) => `rs-${pad(s)}`;
const streamKey = (s) => `sp_rs_stream_${pad(s)}`;

function seed(streams) {
  return {
    users: [{ id: 'rs-owner', name: 'Redis store owner', readerKey: 'sp_rs_owner', follows: [] }],
    streams: Array.from({ length: streams }, (_, s) => ({
      id: streamId(s),
      name: streamId(s),
      owner: 'rs-owner',
      key: streamKey(s),
    })),
  };
}

/** Waits for the next ack on `ws` (rejects on an error event or a close). */
function nextAck(ws) {
  return new Promise((resolve, reject) => {
    const onMessage = (data) => {
      const text = data.toString('utf8');
      if (text.includes('"event":"ack"')) done(resolve, text);
      else if (text.includes('"event":"error"')) done(reject, new Error(`post refused: ${text.slice(0, 300)}`));
    };
    const onClose = (code) => done(reject, new Error(`publisher closed (${code})`));
    const done = (settle, value) => {
      ws.off('message', onMessage);
      ws.off('close', onClose);
      settle(value);
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
  });
}

/** Publishes `count` posts, one in flight per stream; resolves to the last ack's text. */
async function publish(publishers, count, contentBytes, tag, releaseAt) {
  let last;
  for (let turn = 0; turn * publishers.length < count; turn++) {
    const acks = [];
    for (let s = 0; s < publishers.length && turn * publishers.length + s < count; s++) {
      const content = `${tag}:${turn}:${s}:`.padEnd(contentBytes, 'x');
      const data = { streamId: streamId(s), content, contentType: 'rawtext', ...(releaseAt && { releaseAt }) };
      const ack = nextAck(publishers[s]);
      publishers[s].send(JSON.stringify({ event: 'add-stream-post', data }));
      acks.push(ack);
    }
    last = (await Promise.all(acks)).at(-1);
  }
  return last;
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true });
  requireWhole(config, Object.keys(DEFAULTS));
  if (config.posts / config.streams >= HISTORY)
    throw new RangeError(`--posts / --streams must stay below ${HISTORY} (the history a stream keeps)`);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seedFile = await writeSeed('redis-store', seed(config.streams));
  const redis = await startRedis();
  let server;
  const publishers = [];
  try {
    server = await startStreamPosts(['--seed', seedFile.path, '--rate-limit', '0', '--store', redis.url]);
    const url = `${server.url}/v1/ws`;
    for (let s = 0; s < config.streams; s++) publishers.push(await openPublisher(url, { 'x-api-key': streamKey(s) }));
    const idle = await redis.counters();
    const lastAck = await publish(publishers, config.posts, config.contentBytes, 'p');
    const afterPosts = await redis.counters();
    const releaseAt = new Date(Date.now() + 86_400_000).toISOString();
    await publish(publishers, config.posts, config.contentBytes, 'h', releaseAt);
    const afterHidden = await redis.counters();

    const post = JSON.parse(lastAck).data.post;
    const frameBytes = Buffer.byteLength(JSON.stringify({ event: 'stream.post.created', data: post }));
    const posts = perUnit(idle, afterPosts, config.posts);
    const hidden = perUnit(afterPosts, afterHidden, config.posts);
    log(`  posts: ${JSON.stringify(posts)}\n  hidden: ${JSON.stringify(hidden)}`);
    const vsFrame = (...args) => comparison("the post's stream.post.created frame", ...args);
    return {
      name: 'redis-store',
      figures: [
        vsFrame('Redis memory per post (used_memory)', 'B', round(posts.usedMemoryBytes), frameBytes),
        vsFrame(
          'Redis memory per pending release (hidden post, used_memory)',
          'B',
          round(hidden.usedMemoryBytes),
          frameBytes,
        ),
        comparison(null, "Redis commands per publish (scripts' included)", 'commands', posts.commands, null),
        vsFrame('Redis bytes in + out per publish', 'B', round(posts.bytes), frameBytes),
        comparison(null, "Redis commands per hidden publish (scripts' included)", 'commands', hidden.commands, null),
        vsFrame('Redis bytes in + out per hidden publish', 'B', round(hidden.bytes), frameBytes),
      ],
      notes:
        `One serve --store on a redis-server of the benchmark's own (no persistence), ${config.streams} streams, no subscribers; ` +
        `${config.posts} immediate posts then ${config.posts} hidden posts released a day ahead, ${config.contentBytes}-byte content, ` +
        `one in flight per stream. Deltas of INFO memory used_memory, INFO commandstats calls and INFO stats net bytes, per post. ` +
        `Commands count those run inside scripts; bytes include the pub/sub message to the instance itself.`,
      config,
      perPost: posts,
      perHiddenPost: hidden,
      frameBytes,
    };
  } finally {
    for (const ws of publishers) ws.terminate();
    await server?.stop();
    await redis.stop();
    await seedFile.remove();
  }
}
