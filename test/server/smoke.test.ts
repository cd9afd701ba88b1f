import { describe, expect, it } from 'vitest';
import { connectAs, KEYS, publish, startTestServer } from '../support/harness.js';

describe('serve smoke', () => {
  it('delivers a published post to a subscriber', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    const ack = await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    expect(ack.event).toBe('sub_ack');
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'hello' });
    const delivered = await alice.nextEvent('stream.post.created');
    expect(delivered.data).toEqual({ ...post, hidden: false });
  });
});
