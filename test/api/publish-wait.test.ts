import { describe, expect, it } from 'vitest';
import { proxyTo } from '../support/proxy.js';
import { client } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('publish({ timeoutMs })', () => {
  it('0 waits through an outage as long as the client lives; the same client with its own timeoutMs gives up', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const author = await client({ url: proxy.url, apiKey: srv.keys.streams['macro-wire']!, timeoutMs: 200 });
    proxy.refuse(true);
    proxy.cut();
    const patient = author.publish({ streamId: 'macro-wire', content: 'bulk load', timeoutMs: 0 });
    // A publish bounded by the client's 200 ms runs out during the same outage: the first is still waiting.
    await expect(author.publish({ streamId: 'macro-wire', content: 'in a hurry' })).rejects.toMatchObject({
      code: 'timeout',
    });
    proxy.refuse(false);
    const { post, duplicate } = await patient;
    expect(post.text).toBe('bulk load');
    expect(duplicate).toBe(false);
  });

  it('is checked like the other options', async () => {
    const srv = await server();
    const author = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    await expect(author.publish({ streamId: 'macro-wire', content: 'x', timeoutMs: -1 })).rejects.toThrow(RangeError);
    await expect(author.publish({ streamId: 'macro-wire', content: 'x', timeoutMs: '5' as never })).rejects.toThrow(
      TypeError,
    );
  });
});

describe('publishOrRefusal and statedServerTime', () => {
  it("resolves the service's refusal of a post as its error, and a good post as publish does", async () => {
    const srv = await server();
    const author = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const refused = await author.publishOrRefusal({ streamId: 'crypto-legal', content: 'not my stream' });
    expect(refused).toMatchObject({ name: 'StreamPostsError', code: 'forbidden' });
    const stored = await author.publishOrRefusal({ streamId: 'macro-wire', content: 'mine' });
    expect(stored).toMatchObject({ duplicate: false, post: { streamId: 'macro-wire', text: 'mine' } });
    expect(Date.parse(author.statedServerTime!)).not.toBeNaN();
    expect(author.statedServerTime).toBe(author.serverTime);
  });
});
