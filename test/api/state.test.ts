import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, StreamPostsError } from '../../src/index.js';
import { client } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-api-state-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('startServer({ state })', () => {
  it('close() saves; a server started on the same file has the posts, the pending release and the key', async () => {
    const file = join(tmp, 'restart.json');
    const first = await startServer({ port: 0, state: file });
    const owner = await client({ url: first.url, apiKey: first.keys.streams['macro-wire']! });
    const hidden = await owner.publish({ streamId: 'macro-wire', content: 'later', releaseAt: Date.now() + 3_600_000 });
    const keyed = await owner.publish({ streamId: 'macro-wire', content: 'keyed', idempotencyKey: 'k-1' });
    await owner.close();
    const before = await first.exportState();
    await first.close();

    const second = await server({ state: file });
    const after = await second.exportState();
    expect({ ...after, savedAt: '' }).toEqual({ ...before, savedAt: '' });
    // The client gives every post an idempotency key: the hidden one has one too.
    expect(await second.state()).toMatchObject({ scheduledReleases: 1, idempotencyKeys: 2 });
    const again = await client({ url: second.url, apiKey: second.keys.streams['macro-wire']! });
    const resent = await again.publish({ streamId: 'macro-wire', content: 'keyed', idempotencyKey: 'k-1' });
    expect(resent).toEqual({ ...keyed, duplicate: true });
    const released = again.subscribe({ streamIds: ['macro-wire'] });
    await released.ready;
    await second.advanceClock(3_600_000);
    for await (const event of released) {
      if (event.type !== 'released') continue;
      expect(event.post).toMatchObject({ id: hidden.post.id, text: 'later', hidden: false });
      break;
    }
  });

  it('a file it cannot use rejects with invalid-state naming the file, and is left as it was', async () => {
    const file = join(tmp, 'corrupt.json');
    await writeFile(file, '{"format":"stream-posts-state","vers');
    const error = await startServer({ port: 0, state: file }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('invalid-state');
    expect((error as Error).message).toContain(`state file ${file}: is not valid JSON`);
    expect(await readFile(file, 'utf8')).toBe('{"format":"stream-posts-state","vers');
  });

  it('one writer per file: a second start on it rejects with state-locked naming the file and the PID; close() frees it', async () => {
    const file = join(tmp, 'locked.json');
    const first = await startServer({ port: 0, state: file });
    const error = await startServer({ port: 0, state: file }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('state-locked');
    expect((error as Error).message).toContain(`state file ${file} is in use by process ${process.pid} `);
    await first.close();
    const second = await startServer({ port: 0, state: file });
    await second.close();
  });

  it('a start that fails after taking the file (its port is taken) leaves the file free', async () => {
    const file = join(tmp, 'port-taken.json');
    const holder = await startServer({ port: 0 });
    const port = Number(new URL(holder.url).port);
    await expect(startServer({ port, state: file })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await holder.close();
    const started = await startServer({ port: 0, state: file });
    await started.close();
  });

  it('is refused with a redis:// store, which persists by itself', async () => {
    await expect(startServer({ port: 0, state: join(tmp, 'x.json'), store: 'redis://127.0.0.1:1' })).rejects.toThrow(
      /state cannot be used with a redis:\/\/ store/,
    );
  });
});
