import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, StreamPostsError } from '../../src/index.js';
import { connectAs, http, KEYS, startTestServer as server } from '../support/harness.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-targets-state-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('selected custom targets and --state', () => {
  it('a selection made over REST, and a post’s metadata, survive a restart on the same file', async () => {
    const file = join(tmp, 'targets.json');
    const first = await server({ state: file });
    const selected = await http(first, 'POST', '/v1/streams/whale-alerts/custom-targets', {
      key: KEYS.alice,
      body: { customTargets: ['SOL'] },
    });
    expect(selected.status).toBe(200);
    const withMetadata = await http(first, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'kept', metadata: { headline: 'Kept' } },
    });
    expect(withMetadata.status).toBe(201);
    await first.close();
    expect(JSON.parse(await readFile(file, 'utf8')).customTargets.alice).toEqual({ 'whale-alerts': ['SOL'] });

    const second = await server({ state: file });
    const stream = await http(second, 'GET', '/v1/streams/whale-alerts', { key: KEYS.alice });
    expect(stream.body.selectedTargets).toEqual(['SOL']);
    const [kept] = (await http(second, 'GET', '/v1/streams/macro-wire/posts?limit=1', { key: KEYS.alice })).body.posts;
    expect(kept).toEqual(withMetadata.body.post);
    const alice = await connectAs(second, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'whale-alerts' });
    for (const customTarget of ['BTC', 'SOL']) {
      await http(second, 'POST', '/v1/streams/whale-alerts/post', {
        key: KEYS.whaleAlerts,
        body: { content: customTarget, customTarget },
      });
    }
    expect((await alice.nextEvent('stream.post.created')).data.customTarget).toBe('SOL');
  });

  it('a file whose selection names a target the seed does not offer is refused, naming it', async () => {
    const file = join(tmp, 'bad-targets.json');
    const first = await server({ state: file });
    await first.close();
    const document = JSON.parse(await readFile(file, 'utf8'));
    document.customTargets.bob['whale-alerts'] = ['DOGE'];
    await writeFile(file, JSON.stringify(document));
    const error = await startServer({ port: 0, state: file }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as Error).message).toContain(
      'customTargets.bob.whale-alerts: stream "whale-alerts" offers no target "DOGE"',
    );
  });
});
