import { describe, expect, it } from 'vitest';
import { StreamPostsError, type PostEvent } from '../../src/index.js';
import { client } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

async function next(events: AsyncIterator<PostEvent>): Promise<PostEvent> {
  const result = await events.next();
  if (result.done) throw new Error('the subscription ended');
  return result.value;
}

describe('server.play(scenario, { stepped: true }) and server.step()', () => {
  it('runs one step per call, in time order; a relative release fires at the step of its time', async () => {
    const srv = await server();
    const alice = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const feed = alice.subscribe({ streamIds: ['macro-wire'] });
    await feed.ready;
    const events = feed[Symbol.asyncIterator]();
    const playback = await srv.play(
      [
        { at: '1m', publish: { stream: 'macro-wire', content: 'at one minute' } },
        { at: 0, publish: { stream: 'macro-wire', content: 'embargoed', hidden: true, releaseAt: '+2m' } },
        { at: '2m', log: 'the release is due' },
        { at: '3m', publish: { stream: 'macro-wire', content: 'dup', idempotencyKey: 'k' } },
        { at: '3m', publish: { stream: 'macro-wire', content: 'dup', idempotencyKey: 'k' } },
      ],
      { stepped: true },
    );
    expect(playback.steps).toBe(5);

    const first = await srv.step();
    expect(first).toMatchObject({ index: 1, at: 0, kind: 'publish', duplicate: false });
    expect(first!.post).toMatchObject({ text: 'embargoed', hidden: true });
    expect(await next(events)).toMatchObject({ type: 'created', post: { id: first!.post!.id, hidden: true } });

    expect(await srv.step()).toMatchObject({ index: 0, at: 60_000, post: { text: 'at one minute' } });
    expect(await next(events)).toMatchObject({ type: 'created', post: { text: 'at one minute' } });

    expect(await srv.step()).toEqual({ index: 2, at: 120_000, kind: 'log' });
    expect(await next(events)).toMatchObject({
      type: 'released',
      post: { id: first!.post!.id, text: 'embargoed', hidden: false },
    });

    const original = await srv.step();
    const again = await srv.step();
    expect(again).toMatchObject({ duplicate: true, post: { id: original!.post!.id } });
    expect(await srv.step()).toBeUndefined();
    expect(await playback.done).toEqual({ steps: 5, published: 3, failed: 0 });
  });

  it('applies and clears faults at their steps, as POST /_admin/faults does', async () => {
    const srv = await server();
    const author = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    await srv.play(
      [
        { at: 0, fault: { type: 'fail-publishes', code: 'internal', message: 'scripted outage' } },
        { at: '1s', clearFaults: true },
      ],
      { stepped: true },
    );
    expect(await srv.step()).toMatchObject({ index: 0, kind: 'fault' });
    expect(srv.faults.list()).toMatchObject([{ type: 'fail-publishes', code: 'internal' }]);
    const refused = await author
      .publish({ streamId: 'macro-wire', content: 'refused' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StreamPostsError);
    expect(refused).toMatchObject({ code: 'internal', message: expect.stringContaining('scripted outage') });
    expect(await srv.step()).toMatchObject({ index: 1, kind: 'clear-faults' });
    expect(srv.faults.list()).toEqual([]);
    expect((await author.publish({ streamId: 'macro-wire', content: 'accepted' })).post).toMatchObject({
      text: 'accepted',
    });
  });

  it('a refused publish is reported by its step and the scenario goes on', async () => {
    const srv = await server({ maxPendingReleases: 1 });
    await srv.play(
      [
        { at: 0, publish: { stream: 'macro-wire', content: 'a', releaseAt: '+1h' } },
        { at: 0, publish: { stream: 'macro-wire', content: 'b', releaseAt: '+1h' } },
        { at: 0, log: 'still here' },
      ],
      { stepped: true },
    );
    await srv.step();
    expect(await srv.step()).toMatchObject({ kind: 'publish', error: { code: 'limit-exceeded' } });
    expect(await srv.step()).toMatchObject({ kind: 'log' });
  });

  it('a bad step rejects with invalid-scenario naming the step and field; nothing plays', async () => {
    const srv = await server();
    const error = await srv
      .play([
        { at: 0, log: 'ok' },
        { at: 0, publish: { stream: 'macro-wire', content: '' } },
      ])
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('invalid-scenario');
    expect((error as StreamPostsError).path).toBe('step 1');
    expect((error as Error).message).toBe('scenario: step 1: publish.content must not be empty');
    expect((await srv.state()).posts).toBe((await srv.exportState()).postCount);
    await expect(srv.step()).rejects.toThrow('step() needs a scenario played with { stepped: true }');
  });

  it('one scenario at a time', async () => {
    const srv = await server();
    await srv.play([{ at: 0, log: 'a' }], { stepped: true });
    await expect(srv.play([{ at: 0, log: 'b' }])).rejects.toThrow('a scenario is already playing');
  });
});
