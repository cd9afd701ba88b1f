import { describe, expect, it } from 'vitest';
import { client } from '../support/api.js';
import { startTestServer } from '../support/harness.js';
import { watchWarnings } from '../support/warnings.js';

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
