import { describe, expect, it } from 'vitest';
import { publishRest } from '../../src/index.js';
import { connectAs, KEYS, publish, startTestServer } from '../support/harness.js';
import { aliceOnMacroWire, ids, libraryClient, take } from '../support/api.js';

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

describe('pause-deliveries past the slow-consumer limit', () => {
  it('closes the held subscriber with 1013, as a reader that stopped reading would be; others get everything', async () => {
    const server = await startTestServer({ maxBufferedBytes: 64 * 1024 });
    const held = await connectAs(server, KEYS.alice);
    expect((await held.request('on-stream-post', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');
    const other = await connectAs(server, KEYS.bob);
    expect((await other.request('on-stream-post', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');
    await server.faults.add({ type: 'pause-deliveries', scope: { user: 'alice' } });
    const text = 'x'.repeat(16 * 1024);
    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1)
      ids.push((await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: text })).id);
    expect(await held.closed).toEqual({ code: 1013, reason: 'slow consumer' });
    for (const id of ids) await other.next((message) => message.data?.id === id);
  });
});

describe('delay-deliveries', () => {
  it('delivers each post after its delay, in order', async () => {
    const server = await startTestServer();
    const { events } = await aliceOnMacroWire(server);
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

  it('cleared while posts are on their way: they still arrive, in order, and later ones behind them', async () => {
    const server = await startTestServer();
    const wire = await connectAs(server, KEYS.alice);
    expect((await wire.request('on-stream-post', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');
    const fault = await server.faults.add({ type: 'delay-deliveries', delayMs: 60_000 });
    const early = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'delayed' });
    expect(server.faults.clear(fault.id)).toBe(1);
    const late = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'not delayed' });
    const posts = [await wire.nextEvent('stream.post.created'), await wire.nextEvent('stream.post.created')];
    expect(posts.map((message) => message.data.id)).toEqual([early.id, late.id]);
  });
});
