import { describe, expect, it } from 'vitest';
import { connectAs, KEYS, publish, startTestServer } from '../support/harness.js';
import { RecordingLogger } from '../support/logger.js';
import { aliceOnMacroWire, HEARTBEAT, ids, libraryClient, take } from '../support/api.js';

describe('go-silent', () => {
  it('nothing reaches the client, which finds the connection dead by its heartbeat, reconnects and replays the posts it missed', async () => {
    const server = await startTestServer();
    const { reader, events } = await aliceOnMacroWire(server, HEARTBEAT);
    const [connection] = server.connections();
    const fault = await server.faults.add({ type: 'go-silent', scope: { connection: connection!.id } });
    const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const missed = (await publisher.publish({ streamId: 'macro-wire', content: 'into the void' })).post.id;

    await reader.until(() => reader.states.some((state) => state.kind === 'reconnecting'));
    const drop = reader.states.find((state) => state.kind === 'reconnecting');
    expect(drop).toMatchObject({ reason: expect.stringContaining('no answer to a ping within') });
    // The replay after the reconnect brings the post the silent connection swallowed.
    expect(ids(await take(events, 1))).toEqual([missed]);
    // The fault named a connection that is gone: it stays listed until cleared.
    expect(server.faults.clear(fault.id)).toBe(1);
  });

  it('drops what would be sent (posts, replies) and answers no ping; clearing it lets frames flow again', async () => {
    const logger = new RecordingLogger();
    const server = await startTestServer({ logger });
    const wire = await connectAs(server, KEYS.alice);
    expect((await wire.request('on-stream-post', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');
    const fault = await server.faults.add({ type: 'go-silent', scope: { user: 'alice' } });
    let pongs = 0;
    wire.ws.on('pong', () => (pongs += 1));
    const swallowed = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'swallowed' });
    const handled = new Promise<void>((resolve) =>
      logger.onLine((line) => line.message === 'subscribed' && line.fields['requestId'] === 'unanswered' && resolve()),
    );
    wire.ws.ping();
    wire.send({ event: 'on-stream-post', data: { streamIds: ['whale-alerts'] }, requestId: 'unanswered' });
    // The command after the ping has run: the ping was read, and not answered.
    await handled;
    expect(server.connections().find((each) => each.user === 'alice')!.subscriptions).toHaveLength(2);
    server.faults.clear(fault.id);

    const reply = await wire.request('on-stream-post', { streamIds: ['crypto-legal'] });
    expect(reply.event).toBe('sub_ack');
    const answered = new Promise((resolve) => wire.ws.once('pong', resolve));
    wire.ws.ping();
    await answered;
    expect(pongs).toBe(1);
    // Nothing sent while silent comes late: not the post, not the reply.
    expect(wire.messages.some((message) => message.data?.id === swallowed.id)).toBe(false);
    expect(wire.messages.some((message) => message.requestId === 'unanswered')).toBe(false);
  });
});
