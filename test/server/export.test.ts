import { describe, expect, it } from 'vitest';
import { http, KEYS, publish, startTestServer, TEST_STORE } from '../support/harness.js';

describe('GET /_admin/export', () => {
  if (TEST_STORE === 'memory') {
    it('answers the memory store state, a post just published included, with no key in it', async () => {
      const server = await startTestServer();
      const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'exported' });
      const reply = await http(server, 'GET', '/_admin/export');
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ format: 'stream-posts-state', version: 1 });
      expect(reply.body.streams['macro-wire'].at(-1)).toEqual(post);
      for (const key of Object.values(KEYS)) expect(JSON.stringify(reply.body)).not.toContain(key);
      expect(await server.exportState()).toMatchObject({ postCount: reply.body.postCount });
    });
  } else {
    it('is refused with a Redis store, which keeps its state in Redis', async () => {
      const server = await startTestServer();
      const reply = await http(server, 'GET', '/_admin/export');
      expect(reply.status).toBe(400);
      expect(reply.body.error).toEqual({
        code: 'bad-request',
        message: 'the Redis store keeps its state in Redis: read it there',
      });
    });
  }

  it('takes GET only', async () => {
    const server = await startTestServer();
    const reply = await http(server, 'POST', '/_admin/export', { body: {} });
    expect(reply.status).toBe(405);
  });
});
