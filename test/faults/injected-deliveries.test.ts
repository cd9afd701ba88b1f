import { describe, expect, it } from 'vitest';
import { publishRest } from '../../src/index.js';
import { connectAs, KEYS, startTestServer } from '../support/harness.js';
import { ids, libraryClient, take } from './injected-support.js';

describe('pause-deliveries', () => {
  it('holds the posts of matching subscribers; clearing it delivers them in order, and others were never held', async () => {
    const server = await startTestServer();
    const alice = await libraryClient(server, server.keys.readers['alice']!);
    const held = alice.client.subscribe({ streamIds: ['macro-wire'] })[Symbol.asyncIterator]();
    const bob = await libraryClient(server, server.keys.readers['bob']!);
    const bobSubscription = bob.client.subscribe({ streamIds: ['macro-wire'] });
    const live = bobSubscription[Symbol.asyncIterator]();
    await bobSubscription.ready;
    // A raw connection of alice's too, to see that nothing at all reaches her while paused.
    const wire = await connectAs(server, KEYS.alice);
    expect((await wire.request('on-stream-post', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');

    const pause = await server.faults.add({ type: 'pause-deliveries', scope: { user: 'alice' } });
    const published: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const { post } = await publishRest({
        url: server.httpUrl,
        apiKey: server.keys.streams['macro-wire']!,
        streamId: 'macro-wire',
        content: `held ${i}`,
      });
      published.push(post.id);
    }
    // Bob's subscription is not paused: all five reach him meanwhile.
    expect(ids(await take(live, 5))).toEqual(published);
    // Frames on one connection arrive in order: a reply sent after the posts proves none came before it.
    expect((await wire.request('on-stream-post', { streamIds: ['whale-alerts'] })).event).toBe('sub_ack');
    expect(wire.messages.filter((message) => message.event === 'stream.post.created')).toEqual([]);

    expect(server.faults.clear(pause.id)).toBe(1);
    expect(ids(await take(held, 5))).toEqual(published);
    for (const id of published) await wire.next((message) => message.data?.id === id);
  });

  it('holds history too, behind the posts held before it', async () => {
    const server = await startTestServer();
    await server.faults.add({ type: 'pause-deliveries' });
    const wire = await connectAs(server, KEYS.bob);
    const ack = await wire.request('on-stream-post', { streamIds: ['macro-wire'], lastPosts: 1 });
    expect(ack.data.history).toBe(1);
    expect(wire.rest()).toEqual([]);
    server.faults.clear();
    const history = await wire.nextEvent('stream.post.created');
    expect(history.data.streamId).toBe('macro-wire');
  });
});

describe('delay-deliveries', () => {
  it('delivers each post after its delay, in order', async () => {
    const server = await startTestServer();
    const reader = await libraryClient(server, server.keys.readers['alice']!);
    const subscription = reader.client.subscribe({ streamIds: ['macro-wire'] });
    const events = subscription[Symbol.asyncIterator]();
    await subscription.ready;
    const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const fault = await server.faults.add({ type: 'delay-deliveries', delayMs: 100, jitterMs: 100 });
    expect(fault).toMatchObject({ delayMs: 100, jitterMs: 100 });
    const published: { id: string; at: number }[] = [];
    for (let i = 0; i < 5; i += 1) {
      const at = performance.now();
      published.push({ id: (await publisher.publish({ streamId: 'macro-wire', content: `late ${i}` })).post.id, at });
    }
    for (const { id, at } of published) {
      const [event] = await take(events, 1);
      expect(event!.post.id).toBe(id);
      // A lower bound only: the delay is the fault's promise; how much later is the machine's business.
      expect(performance.now() - at).toBeGreaterThanOrEqual(100);
    }
  });
});
