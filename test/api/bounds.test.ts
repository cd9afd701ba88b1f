import { describe, expect, it } from 'vitest';
import { client, rejection } from '../support/api.js';
import { startTestServer } from '../support/harness.js';
import { scriptedService } from '../support/hostile.js';
import { watchWarnings } from '../support/warnings.js';

/** A service whose `connected` says `extra` too, and that acknowledges nothing. */
function stating(extra: Record<string, unknown>) {
  return scriptedService((ws) =>
    ws.send(
      JSON.stringify({ event: 'connected', data: { message: 'connected', userId: 'u', streams: ['s'], ...extra } }),
    ),
  );
}

describe('the client never arms a timer past what Node keeps', () => {
  it('the longest timeoutMs connects over several urls and publishes, with no overflowed timer', async () => {
    const overflow = watchWarnings('TimeoutOverflowWarning');
    try {
      const server = await startTestServer();
      const desk = await client({
        url: [server.url, server.url],
        apiKey: server.keys.streams['macro-wire']!,
        timeoutMs: 2_147_483_647,
      });
      const { post } = await desk.publish({ streamId: 'macro-wire', content: 'no overflow' });
      expect(post.text).toBe('no overflow');
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(overflow.seen).toEqual([]);
    } finally {
      overflow.stop();
    }
  });
});

describe('what a service states is taken within bounds', () => {
  it('a rate limit under one post per timeoutMs: publish rejects at once with rate-limited, naming the rate', async () => {
    const service = await stating({ rateLimit: { perSecond: 1e-7, burst: 1 } });
    const bot = await client({ url: service.url, apiKey: 'sp_test_key_never_shown', timeoutMs: 5_000 });
    const error = await rejection(bot.publish({ streamId: 's', content: 'x' }));
    expect(error.code).toBe('rate-limited');
    expect(error.message).toContain('the service states a rate limit of 1e-7 commands per second');
    expect(error.message).toContain('fewer than one post within 5s');
  });

  it('a serverTime more than 100 years off is not taken; one within is', async () => {
    const far = await stating({ serverTime: '+275760-09-13T00:00:00.000Z' });
    expect((await client({ url: far.url, apiKey: 'sp_test_key_never_shown' })).serverTime).toBeUndefined();
    const near = new Date(Date.now() + 50 * 365 * 86_400_000).toISOString();
    const fine = await stating({ serverTime: near });
    expect((await client({ url: fine.url, apiKey: 'sp_test_key_never_shown' })).serverTime).toBe(near);
  });
});
