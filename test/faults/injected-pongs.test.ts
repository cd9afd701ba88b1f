import { describe, expect, it } from 'vitest';
import { startTestServer } from '../support/harness.js';
import { aliceOnMacroWire, HEARTBEAT, ids, libraryClient, take } from '../support/api.js';

describe('stop-pongs', () => {
  it('the client finds the connection dead by its heartbeat, drops it, reconnects and replays what it missed', async () => {
    const server = await startTestServer();
    const { reader, events } = await aliceOnMacroWire(server, HEARTBEAT);
    const [connection] = server.connections();
    await server.faults.add({ type: 'stop-pongs', scope: { connection: connection!.id } });
    const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);
    // Posts still flow: only pongs stop.
    const before = (await publisher.publish({ streamId: 'macro-wire', content: 'before' })).post.id;
    expect(ids(await take(events, 1))).toEqual([before]);

    await reader.until(() => reader.states.some((state) => state.kind === 'reconnecting'));
    const drop = reader.states.find((state) => state.kind === 'reconnecting');
    expect(drop).toMatchObject({ reason: expect.stringContaining('no answer to a ping within') });
    const after = (await publisher.publish({ streamId: 'macro-wire', content: 'after' })).post.id;
    expect(ids(await take(events, 1))).toEqual([after]);
    expect(server.connections().map((each) => each.id)).not.toContain(connection!.id);
  });
});
