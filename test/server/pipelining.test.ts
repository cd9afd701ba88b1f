import { describe, expect, it } from 'vitest';
import { connectAs, KEYS, startTestServer } from '../support/harness.js';

const BURST = 200;

describe('commands sent without waiting for replies', () => {
  it('publishes answered in the order sent, refusals in their place, posts stored and delivered in that order', async () => {
    const server = await startTestServer();
    const reader = await connectAs(server, KEYS.alice);
    expect((await reader.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
    const publisher = await connectAs(server, KEYS.macroWire);
    for (let i = 0; i < BURST; i += 1) {
      // Every tenth is refused (another stream's id): its error comes between the acks around it.
      const streamId = i % 10 === 9 ? 'whale-alerts' : 'macro-wire';
      publisher.send({
        event: 'add-stream-post',
        data: { streamId, content: `burst ${i}`, contentType: 'rawtext' },
        requestId: `b${i}`,
      });
    }
    // A subscribe after the burst runs once every publish before it is answered: all are its history.
    publisher.send({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 100 }, requestId: 'sub' });

    const replies = [];
    for (let i = 0; i <= BURST; i += 1) replies.push(await publisher.next((m) => m.requestId !== undefined, 10_000));
    expect(replies.map((m) => m.requestId)).toEqual([...Array.from({ length: BURST }, (_, i) => `b${i}`), 'sub']);
    replies.slice(0, BURST).forEach((reply, i) => {
      expect(reply.event).toBe(i % 10 === 9 ? 'error' : 'ack');
      if (i % 10 === 9) expect(reply.data.code).toBe('forbidden');
      else expect(reply.data.post.text).toBe(`burst ${i}`);
    });
    const acked = replies.filter((m) => m.event === 'ack').map((m) => m.data.post.id as string);
    expect([...acked].sort()).toEqual(acked);

    const published = Array.from({ length: BURST }, (_, i) => i)
      .filter((i) => i % 10 !== 9)
      .map((i) => `burst ${i}`);
    expect(replies[BURST]).toMatchObject({ event: 'sub_ack', data: { history: 100 } });
    const historyTexts = [];
    for (let i = 0; i < 100; i += 1)
      historyTexts.push((await publisher.next((m) => m.event === 'stream.post.created', 10_000)).data.text);
    expect(historyTexts).toEqual(published.slice(-100));

    const live = [];
    for (let i = 0; i < published.length; i += 1)
      live.push((await reader.next((m) => m.event === 'stream.post.created', 10_000)).data.text);
    expect(live).toEqual(published);
  });
});
