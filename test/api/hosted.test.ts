import { describe, expect, it } from 'vitest';
import { HOSTED_KEYS, HOSTED_STREAMS, startHostedDouble } from '../support/hosted-double.js';
import { client, take } from '../support/api.js';
import { afterTest } from '../support/harness.js';

// The library against a double of the hosted dialect (PROTOCOL.md B1a).

const [macro, , whales] = HOSTED_STREAMS as [
  (typeof HOSTED_STREAMS)[0],
  (typeof HOSTED_STREAMS)[0],
  (typeof HOSTED_STREAMS)[0],
];

async function hostedDouble() {
  const hosted = await startHostedDouble();
  afterTest(() => hosted.close());
  return hosted;
}

describe('connect to the hosted dialect', () => {
  it('resolves on a connected event that names nothing: its facts stay undefined', async () => {
    const hosted = await hostedDouble();
    const reader = await client({ url: hosted.url, apiKey: HOSTED_KEYS.reader });
    expect([reader.userId, reader.streams, reader.streamId, reader.serverTime]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('subscribe with lastPosts: one subscribe command, the history, then the live post', async () => {
    const hosted = await hostedDouble();
    const reader = await client({ url: hosted.url, apiKey: HOSTED_KEYS.reader });
    const subscription = reader.subscribe({ streamIds: [macro.id], lastPosts: 2 });
    await subscription.ready;
    const events = subscription[Symbol.asyncIterator]();
    const history = await take(events, 2);
    const live = hosted.publish(macro.id, 'live');
    const [next] = await take(events, 1);
    expect(history.map((event) => [event.history, event.format === 'post' && event.post.text])).toEqual([
      [true, 'history 2 of A'],
      [true, 'history 3 of A'],
    ]);
    expect(next).toMatchObject({ history: false, post: { id: live.id, text: 'live' } });
    expect(hosted.subscribes).toEqual([1]);
  });

  it('setCustomTargets replaces the selection; a target the stream does not offer is refused with its code', async () => {
    const hosted = await hostedDouble();
    const reader = await client({ url: hosted.url, apiKey: HOSTED_KEYS.reader });
    expect(await reader.setCustomTargets(whales.id, ['ETH'])).toEqual(['ETH']);
    expect(hosted.selected.get(whales.id)).toEqual(['ETH']);
    await expect(reader.setCustomTargets(whales.id, ['DOGE'])).rejects.toMatchObject({ code: 'invalid-argument' });
    await expect(reader.setCustomTargets(whales.id, 'ETH' as never)).rejects.toThrow(TypeError);
    expect(hosted.selected.get(whales.id)).toEqual(['ETH']);
  });
});
