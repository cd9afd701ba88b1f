import { describe, expect, it } from 'vitest';
import { connectAs, KEYS, startTestServer } from '../support/harness.js';
import { aliceOnMacroWire, ids, libraryClient, take } from '../support/api.js';

describe('send-frame', () => {
  it.each([
    ['malformed JSON', '{"event":"stream.post.created","data":'],
    ['an unknown event', '{"event":"stream.post.exploded","data":{"id":"x"}}'],
    ['a post event missing its fields', '{"event":"stream.post.created","data":{"id":42}}'],
    ['not JSON at all', 'hello \u001b[31m'],
  ])('with %s: the client ignores it and carries on', async (_what, frame) => {
    const server = await startTestServer();
    const { reader, events } = await aliceOnMacroWire(server);
    const fault = await server.faults.add({ type: 'send-frame', frame, scope: { user: 'alice' } });
    expect(fault.applied).toBe(1);
    expect(server.faults.list()).toEqual([]);

    const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const next = (await publisher.publish({ streamId: 'macro-wire', content: 'after the odd frame' })).post.id;
    expect(ids(await take(events, 1))).toEqual([next]);
    expect(reader.states.filter((state) => state.kind === 'reconnecting')).toEqual([]);
  });

  it('sends the text as it is, once, to each matching connection', async () => {
    const server = await startTestServer();
    const bob = await connectAs(server, KEYS.bob);
    const alice = await connectAs(server, KEYS.alice);
    expect((await server.faults.add({ type: 'send-frame', frame: '{"event":"hello"}' })).applied).toBe(2);
    expect(await bob.nextEvent('hello')).toEqual({ event: 'hello' });
    expect(await alice.nextEvent('hello')).toEqual({ event: 'hello' });
  });
});
