import { createHash } from 'node:crypto';
import { readFileSync, watch } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Arrivals } from '../support/arrivals.js';
import { advanceClock, adminState, connectAs, http, KEYS, publishToStream } from '../support/harness.js';
import { cliCommandLine, ensureBuilt, runToEnd, shell } from '../support/cli.js';
import { expectCleanError } from '../support/cli-output.js';
import { inMs } from '../support/fixtures.js';
import { getMedia, PNG, publishWithMedia, put } from '../support/media.js';
import { startServe, type Serve } from '../support/serve.js';

beforeAll(ensureBuilt);

let tmp: string;
let files = 0;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-state-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function stateFile(): string {
  return join(tmp, `state-${++files}.json`);
}

const HOUR = 3_600_000;

/** SIGTERM, and the exit code it ends with. */
async function stop(serve: Serve): Promise<number | null> {
  serve.cli.child.kill('SIGTERM');
  return (await serve.cli.exit()).code;
}

/** A serve of the demo seed, with its state kept in `file`, run once to leave a valid state file there. */
async function savedState(file: string, publish?: (serve: Serve) => Promise<void>): Promise<string> {
  const serve = await startServe(['--state', file]);
  await publish?.(serve);
  expect(await stop(serve)).toBe(0);
  return readFile(file, 'utf8');
}

describe('serve --state: a restart keeps what was pending', () => {
  it('hidden posts published before a SIGTERM are released after the restart when the clock reaches their time', async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    const published = [];
    for (const [i, streamId] of ['macro-wire', 'crypto-legal', 'macro-wire'].entries()) {
      published.push(
        (await publishToStream(first.url, streamId, `embargoed ${i}`, { releaseAt: inMs(HOUR + i) })).post,
      );
    }
    expect(await stop(first)).toBe(0);

    const second = await startServe(['--state', file]);
    expect(await adminState(second)).toMatchObject({ scheduledReleases: 3 });
    const alice = await connectAs(second, KEYS.alice);
    expect((await alice.request('on-stream-post', { lastPosts: 100 })).event).toBe('sub_ack');
    // The hidden posts are in the history, still hidden, with the ids they were given before the restart.
    const history = alice.rest().filter((message) => message.event === 'stream.post.created');
    for (const post of published) {
      expect(history.map((message) => message.data)).toContainEqual({
        ...post,
        text: null,
        metadata: null,
        hidden: true,
      });
    }

    await advanceClock(second, HOUR + 10);
    const released = [];
    for (let i = 0; i < 3; i += 1) released.push((await alice.nextEvent('stream.post.released')).data);
    expect(released.map((post) => [post.id, post.text, post.hidden])).toEqual(
      published.map((post) => [post.id, post.text, false]),
    );
    expect(await adminState(second)).toMatchObject({ scheduledReleases: 0 });
  });

  it('a resent idempotency key after a restart returns the original post with duplicate: true', async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    const original = await publishToStream(first.url, 'macro-wire', 'once only', { idempotencyKey: 'job-42' });
    expect(original.duplicate).toBe(false);
    expect(await stop(first)).toBe(0);

    const second = await startServe(['--state', file]);
    const again = await publishToStream(second.url, 'macro-wire', 'once only', { idempotencyKey: 'job-42' });
    expect(again).toEqual({ post: original.post, duplicate: true });
    expect(await adminState(second)).toMatchObject({ idempotencyKeys: 1 });
  });

  it('keeps the clock offset, and the posts in each stream history in order', async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    await advanceClock(first, 5 * HOUR);
    const posts = [];
    for (const text of ['one', 'two', 'three'])
      posts.push((await publishToStream(first.url, 'crypto-legal', text)).post);
    expect(await stop(first)).toBe(0);

    const second = await startServe(['--state', file]);
    expect((await adminState(second)).clockOffsetMs).toBeGreaterThanOrEqual(5 * HOUR);
    const reply = await http(second, 'GET', '/v1/streams/crypto-legal/posts?limit=3', { key: KEYS.cryptoLegal });
    expect(reply.body.posts.map((post: any) => post.id)).toEqual(posts.map((post) => post.id).reverse());
  });
});

describe('serve --state keeps uploaded media', () => {
  it("an embargoed post's image across a restart: 404 to others before the release, 200 to everyone after it", async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    const published = await publishWithMedia(first, [{ mimeType: 'image/png' }], { releaseAt: inMs(HOUR) });
    expect(published.status).toBe(201);
    expect(published.body.post.hidden).toBe(true);
    const [upload] = published.body.mediaUploadURLs as { url: string }[];
    expect((await put(upload!.url, 'image/png', PNG)).status).toBe(200);
    const served = (published.body.post.metadata.media as { url: string }[])[0]!.url;
    expect((await getMedia(served, KEYS.macroWire)).status).toBe(200);
    expect(await stop(first)).toBe(0);
    expect(await readdir(`${file}.media`)).toHaveLength(1);

    const second = await startServe(['--state', file]);
    const url = `${second.httpUrl}${new URL(served).pathname}`;
    expect((await getMedia(url)).status).toBe(404);
    expect((await getMedia(url, KEYS.alice)).status).toBe(404);
    const owner = await getMedia(url, KEYS.macroWire);
    expect(owner.status).toBe(200);
    expect(owner.bytes.equals(PNG)).toBe(true);
    await advanceClock(second, HOUR + 1_000);
    const anyone = await getMedia(url);
    expect(anyone).toMatchObject({ status: 200, type: 'image/png' });
    expect(anyone.bytes.equals(PNG)).toBe(true);
    expect(await stop(second)).toBe(0);
  });

  it('a state file whose media bytes are gone is refused (exit 2), naming them', async () => {
    const file = stateFile();
    await savedState(file, async (serve) => {
      const published = await publishWithMedia(serve, [{ mimeType: 'image/png' }]);
      const [upload] = published.body.mediaUploadURLs as { url: string }[];
      expect((await put(upload!.url, 'image/png', PNG)).status).toBe(200);
    });
    const [name] = await readdir(`${file}.media`);
    await rm(join(`${file}.media`, name!));
    const result = await runToEnd(['serve', '--port', '0', '--state', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`media[0]: its bytes (${join(`${file}.media`, name!)}) are missing or changed`);
  });
});

describe('serve --state saves a change without waiting for a stop', () => {
  it('a post is in the file soon after it was published: a SIGKILL then loses nothing of it', async () => {
    const directory = await mkdtemp(join(tmp, 'crash-'));
    const file = join(directory, 'state.json');
    const first = await startServe(['--state', file]);
    const arrivals = new Arrivals();
    const watcher = watch(directory, () => arrivals.notify());
    try {
      const { post } = await publishToStream(first.url, 'macro-wire', 'saved before the crash', {
        idempotencyKey: 'crash',
      });
      // Saved by rename: each write of the file is an event in its directory.
      await arrivals.until(
        () => readFileSync(file, 'utf8').includes(post.id),
        10_000,
        () => new Error('the post never reached the state file'),
      );
      first.cli.child.kill('SIGKILL');
      await first.cli.exit();
      const second = await startServe(['--state', file]);
      const again = await publishToStream(second.url, 'macro-wire', 'saved before the crash', {
        idempotencyKey: 'crash',
      });
      expect(again).toEqual({ post, duplicate: true });
    } finally {
      watcher.close();
    }
  });
});

describe('GET /_admin/export', () => {
  it('answers the state a state file holds: posts, pending releases, idempotency key digests, and no key', async () => {
    const serve = await startServe();
    const hidden = (await publishToStream(serve.url, 'macro-wire', 'later', { releaseAt: inMs(HOUR) })).post;
    const keyed = (await publishToStream(serve.url, 'crypto-legal', 'keyed', { idempotencyKey: 'export-key' })).post;
    const reply = await http(serve, 'GET', '/_admin/export');
    expect(reply.status).toBe(200);
    const state = reply.body;
    expect(state).toMatchObject({ format: 'stream-posts-state', version: 1, clockOffsetMs: 0, held: [] });
    expect(Object.keys(state.streams)).toEqual(['crypto-legal', 'macro-wire', 'whale-alerts']);
    expect(state.streams['macro-wire'].at(-1)).toEqual(hidden);
    expect(state.streams['crypto-legal'].at(-1)).toEqual(keyed);
    expect(state.pendingReleases).toEqual([{ postId: hidden.id, releaseAt: hidden.releaseAt }]);
    expect(state.idempotencyKeys).toEqual([
      {
        streamId: 'crypto-legal',
        keyDigest: createHash('sha256').update('export-key').digest('hex'),
        postId: keyed.id,
        expiresAt: expect.any(String),
      },
    ]);
    const text = JSON.stringify(state);
    for (const key of Object.values(KEYS)) expect(text).not.toContain(key);
    expect(text).not.toContain('export-key');
  });
});

describe('serve --state refuses a file it cannot use, and leaves it as it was', () => {
  const cases: [string, (valid: any, text: string) => string, RegExp][] = [
    ['garbage', () => 'not json at all', /is not valid JSON, truncated or corrupt/],
    ['a truncated file', (_valid, text) => text.slice(0, Math.floor(text.length / 2)), /is not valid JSON/],
    ['an empty file', () => '', /is empty \(truncated\?\)/],
    ['a file of something else', () => JSON.stringify({ users: [] }), /is not a stream-posts state file/],
    [
      'another version',
      (valid) => JSON.stringify({ ...valid, version: 99 }),
      /is in state format version 99; this stream-posts reads version 1/,
    ],
    [
      'a file saved with another seed',
      (valid) => JSON.stringify({ ...valid, seed: '0'.repeat(64) }),
      /was saved by a serve with another seed/,
    ],
    [
      'a bad field',
      (valid) => JSON.stringify({ ...valid, clockOffsetMs: 'soon' }),
      /clockOffsetMs: .*expected number, received string/,
    ],
    [
      'a release of a post it does not hold',
      (valid) => JSON.stringify({ ...valid, pendingReleases: [{ postId: 'nope', releaseAt: valid.savedAt }] }),
      /pendingReleases\[0\]\.postId: no hidden post "nope"/,
    ],
  ];

  it.each(cases)('%s: exit 2, a message naming the file and the fault', async (_name, corrupt, message) => {
    const file = stateFile();
    const text = await savedState(file);
    const bad = corrupt(JSON.parse(text), text);
    await writeFile(file, bad);
    const result = await runToEnd(['serve', '--port', '0', '--state', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`stream-posts: --state: state file ${file}: `);
    expect(result.stderr).toMatch(message);
    expectCleanError(result.stderr);
    expect(await readFile(file, 'utf8')).toBe(bad);
    expect((await readdir(tmp)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('a state file of the demo seed given with another seed is refused (exit 2)', async () => {
    const file = stateFile();
    const text = await savedState(file);
    const seed = join(tmp, 'other-seed.json');
    await writeFile(
      seed,
      JSON.stringify({
        users: [{ id: 'carol', name: 'Carol', readerKey: 'sp_other_reader_carol', follows: ['desk'] }],
        streams: [{ id: 'desk', name: 'Desk', owner: 'carol', key: 'sp_other_stream_desk' }],
      }),
    );
    const result = await runToEnd(['serve', '--port', '0', '--seed', seed, '--state', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`state file ${file}: was saved by a serve with another seed`);
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('a place the state cannot be written to stops the start (exit 2), not the stop', async () => {
    const file = join(tmp, 'no-such-directory', 'state.json');
    const result = await runToEnd(['serve', '--port', '0', '--state', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`stream-posts: --state: state file ${file}: cannot be written (ENOENT)`);
  });

  it('--state with --store redis:// is refused before connecting, saying why (exit 2)', async () => {
    const result = await runToEnd(['serve', '--port', '0', '--state', stateFile(), '--store', 'redis://127.0.0.1:1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--state cannot be used with a redis:// store');
    expect(result.stderr).toContain('persists by itself');
  });
});

describe('serve --state: one writer per file', () => {
  it('a second serve on the same file exits 2 naming the file and the PID that holds it; after a stop the file is free', async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    const before = await readFile(file, 'utf8');
    const second = await runToEnd(['serve', '--port', '0', '--state', file]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(
      `stream-posts: --state: state file ${file} is in use by process ${first.cli.child.pid} `,
    );
    expectCleanError(second.stderr);
    expect(await readFile(file, 'utf8')).toBe(before);
    // The first goes on with the file as its own.
    const { post } = await publishToStream(first.url, 'macro-wire', 'by the holder', { idempotencyKey: 'holder' });
    expect(await stop(first)).toBe(0);
    expect(await readdir(tmp)).not.toContain(`${basename(file)}.lock`);
    const third = await startServe(['--state', file]);
    expect(await publishToStream(third.url, 'macro-wire', 'by the holder', { idempotencyKey: 'holder' })).toEqual({
      post,
      duplicate: true,
    });
  });

  it('a lock left by a killed serve is taken over', async () => {
    const file = stateFile();
    const first = await startServe(['--state', file]);
    first.cli.child.kill('SIGKILL');
    await first.cli.exit();
    expect((await readFile(`${file}.lock`, 'utf8')).split('\n')[0]).toBe(String(first.cli.child.pid));
    const second = await startServe(['--state', file]);
    expect((await readFile(`${file}.lock`, 'utf8')).split('\n')[0]).toBe(String(second.cli.child.pid));
    expect(await stop(second)).toBe(0);
    expect(await readdir(tmp)).not.toContain(`${basename(file)}.lock`);
  });

  it("a lock naming serve's own PID, as a restarted container leaves it, is taken over", async () => {
    const file = stateFile();
    const lock = `${file}.lock`;
    // The shell writes the lock as its own (its PID, host and start time), then becomes serve: the same PID.
    const serve = shell(
      `printf '%s\\n%s\\n%s\\n' $$ "$(cat /proc/sys/kernel/hostname)" "$(cut -d' ' -f22 /proc/$$/stat)" > '${lock}' && exec ${cliCommandLine(['serve', '--port', '0', '--quiet', '--state', file])}`,
    );
    const url = await serve.url();
    expect((await readFile(lock, 'utf8')).split('\n')[0]).toBe(String(serve.child.pid));
    await publishToStream(url, 'macro-wire', 'after the restart');
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
    expect(await readFile(file, 'utf8')).toContain('after the restart');
    expect(await readdir(tmp)).not.toContain(basename(lock));
  });

  it('a lock naming a live process that started at another time (its PID reused) is taken over; one naming it as it is, is not', async () => {
    const file = stateFile();
    const lock = `${file}.lock`;
    const host = (await readFile('/proc/sys/kernel/hostname', 'utf8')).trim();
    const stat = await readFile(`/proc/${process.pid}/stat`, 'utf8');
    const startedAt = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
    // This test's own process runs, and is no serve: as a holder that started when it did, it holds the file.
    await writeFile(lock, `${process.pid}\n${host}\n${startedAt}\n`);
    const refused = await runToEnd(['serve', '--port', '0', '--state', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`state file ${file} is in use by process ${process.pid} `);
    // The same PID, of a holder that started at another time: that holder is gone.
    await writeFile(lock, `${process.pid}\n${host}\n${Number(startedAt) - 1}\n`);
    const serve = await startServe(['--state', file]);
    expect((await readFile(lock, 'utf8')).split('\n')[0]).toBe(String(serve.cli.child.pid));
    expect(await stop(serve)).toBe(0);
  });

  it('two names of one file (a link F to G) are one file: the second serve is refused, and a save writes through the link', async () => {
    const directory = await mkdtemp(join(tmp, 'links-'));
    const real = join(directory, 'real.json');
    const linked = join(directory, 'linked.json');
    await symlink('real.json', linked);
    const first = await startServe(['--state', real]);
    const second = await runToEnd(['serve', '--port', '0', '--state', linked]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`state file ${linked} is in use by process ${first.cli.child.pid} `);
    expect(second.stderr).toContain(`(lock ${real}.lock)`);
    expect(await stop(first)).toBe(0);

    const third = await startServe(['--state', linked]);
    await publishToStream(third.url, 'macro-wire', 'through the link');
    expect(await stop(third)).toBe(0);
    expect((await lstat(linked)).isSymbolicLink()).toBe(true);
    expect(await readFile(real, 'utf8')).toContain('through the link');
    // A link to a file not written yet is followed too.
    const dangling = join(directory, 'dangling.json');
    await symlink('later.json', dangling);
    expect(await stop(await startServe(['--state', dangling]))).toBe(0);
    expect((await lstat(dangling)).isSymbolicLink()).toBe(true);
    expect(await readFile(join(directory, 'later.json'), 'utf8')).toContain('stream-posts-state');
  });

  it('temporary files of interrupted writes are removed at start; other files are not', async () => {
    const directory = await mkdtemp(join(tmp, 'leftovers-'));
    const file = join(directory, 'state.json');
    const leftovers = ['.state.json.4242.tmp', '.state.json.99999999.tmp'];
    const others = ['.other.json.4242.tmp', '.state.json.tmp', 'state.json.4242.tmp'];
    for (const name of [...leftovers, ...others]) await writeFile(join(directory, name), 'x'.repeat(1024));
    const serve = await startServe(['--state', file]);
    expect((await readdir(directory)).sort()).toEqual([...others, 'state.json', 'state.json.lock'].sort());
    expect(await stop(serve)).toBe(0);
  });
});
