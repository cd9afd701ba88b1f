import { describe, expect, it } from 'vitest';
import {
  fetchPosts,
  fetchStream,
  fetchStreams,
  isOptionError,
  publishRest,
  scenarioFromListenRecording,
  setCustomTargets,
  StreamPostsError,
  type PostEvent,
} from '../../src/index.js';
import { client, rejection } from '../support/api.js';
import { KEYS, startTestServer as server } from '../support/harness.js';

/** The bad-option error a call throws (synchronously or as its rejection). */
async function badOption(call: () => Promise<unknown>): Promise<{ kind: string; option: string; message: string }> {
  const error = await Promise.resolve()
    .then(call)
    .then(
      () => undefined,
      (reason: unknown) => reason,
    );
  if (!isOptionError(error)) throw new Error(`not a bad option: ${String(error)}`);
  return { kind: error.constructor.name, option: error.option, message: error.message };
}

describe('the REST reads', () => {
  it('list the streams, read one, its recent posts newest first, and select custom targets, at several urls', async () => {
    const srv = await server();
    for (const content of ['first', 'second', 'third'])
      await publishRest({ url: srv.httpUrl, apiKey: srv.keys.streams['macro-wire']!, streamId: 'macro-wire', content });
    // The first url is a closed port: a read, like a publish, goes on to the next instance.
    const url = ['http://127.0.0.1:1', srv.httpUrl];
    const apiKey = KEYS.alice;

    const streams = await fetchStreams({ url, apiKey });
    expect(streams.map((stream) => stream.id)).toEqual(expect.arrayContaining(['macro-wire', 'whale-alerts']));
    const whale = await fetchStream({ url, apiKey, streamId: 'whale-alerts' });
    expect(whale).toMatchObject({ id: 'whale-alerts', custom: true, customTargets: ['BTC', 'ETH', 'SOL'] });
    const posts = await fetchPosts({ url: srv.url, apiKey, streamId: 'macro-wire', limit: 2 });
    expect(posts.map((post) => post.text)).toEqual(['third', 'second']);

    expect(await setCustomTargets({ url, apiKey, streamId: 'whale-alerts', targets: ['SOL'] })).toEqual(['SOL']);
    expect((await fetchStream({ url, apiKey, streamId: 'whale-alerts' })).selectedTargets).toEqual(['SOL']);
  });

  it("fail as the library's errors: the service's code and status, a refused key without the key in the message", async () => {
    const srv = await server();
    const missing = await rejection(fetchStream({ url: srv.httpUrl, apiKey: KEYS.alice, streamId: 'no-such-stream' }));
    expect([missing.code, missing.status]).toEqual(['not-found', 404]);
    const key = 'sp_not_a_key_at_all';
    const refused = await rejection(fetchPosts({ url: srv.httpUrl, apiKey: key, streamId: 'macro-wire' }));
    expect([refused.code, refused.status]).toEqual(['unauthorized', 401]);
    expect(refused.message).not.toContain(key);
    const offTarget = await rejection(
      setCustomTargets({ url: srv.httpUrl, apiKey: KEYS.alice, streamId: 'whale-alerts', targets: ['DOGE'] }),
    );
    expect(offTarget.code).toBe('invalid-argument');
  });

  it('name a bad option: a RangeError for a limit out of range, else a TypeError', async () => {
    const url = 'http://127.0.0.1:1';
    expect(await badOption(() => fetchPosts({ url, apiKey: 'k', streamId: 's', limit: 0 }))).toEqual({
      kind: 'RangeError',
      option: 'limit',
      message: 'limit must be an integer from 1 to 100, got 0',
    });
    expect(await badOption(() => fetchStreams({ url, apiKey: '' }))).toMatchObject({
      kind: 'TypeError',
      option: 'apiKey',
      message: 'apiKey is required (a non-empty string)',
    });
    expect(await badOption(() => fetchStreams({ url: [], apiKey: 'k' }))).toMatchObject({ option: 'url' });
    expect(await badOption(() => fetchStreams({ url: 'ftp://example.com', apiKey: 'k' }))).toMatchObject({
      option: 'url',
    });
    expect(await badOption(() => fetchStream({ url, apiKey: 'k', streamId: 's', page: 2 } as never))).toMatchObject({
      option: 'page',
      message: expect.stringMatching(/^fetchStream: unknown option "page"/),
    });
    expect(
      await badOption(() => setCustomTargets({ url, apiKey: 'k', streamId: 's', targets: 'BTC' as never })),
    ).toMatchObject({ kind: 'TypeError', option: 'targets', message: 'targets must be an array of strings' });
  });
});

describe('scenarioFromListenRecording', () => {
  it("turns listen --json's lines into a scenario that plays the same posts in the same order", async () => {
    const first = await server();
    const alice = await client({ url: first.url, apiKey: KEYS.alice });
    const feed = alice.subscribe();
    await feed.ready;
    const publisher = await client({ url: first.url, apiKey: first.keys.streams['macro-wire']! });
    await publisher.publish({ streamId: 'macro-wire', content: 'Fed holds rates' });
    await publisher.publish({ streamId: 'macro-wire', content: '**CPI** at 3%', contentType: 'markdown' });
    const recorded: PostEvent[] = [];
    for await (const event of feed) if (recorded.push(event) === 2) break;
    // What `listen --json` writes for each: the protocol's frame.
    const text = recorded
      .map((event) => JSON.stringify({ event: `stream.post.${event.type}`, data: event.post }))
      .join('\n');

    const { steps, warnings } = scenarioFromListenRecording(text);
    expect(warnings).toEqual([]);
    const second = await server();
    const reader = await client({ url: second.url, apiKey: KEYS.alice });
    const replay = reader.subscribe();
    await replay.ready;
    const playback = await second.play(steps, { stepped: true });
    while ((await second.step()) !== undefined);
    expect(await playback.done).toMatchObject({ published: 2, failed: 0 });
    const replayed: PostEvent[] = [];
    for await (const event of replay) if (replayed.push(event) === 2) break;
    const seen = (event: PostEvent) => [event.post.streamId, event.post.text, event.post.contentType];
    expect(replayed.map(seen)).toEqual(recorded.map(seen));
  });

  it('refuses what is not such a recording: invalid-scenario naming the line', () => {
    const thrown = (() => {
      try {
        scenarioFromListenRecording('{"_id":"a tree item"}\n');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(StreamPostsError);
    expect(thrown).toMatchObject({ code: 'invalid-scenario', message: expect.stringContaining('line 1') });
  });
});
