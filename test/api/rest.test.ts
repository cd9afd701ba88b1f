import { describe, expect, it } from 'vitest';
import { fetchStreams, publishRest, StreamPostsError } from '../../src/index.js';
import { client, rejection } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';
import { silentHttpService } from '../support/hostile.js';

describe('publishRest', () => {
  it('publishes with the REST form, opening no WebSocket; the same idempotency key gives the one post', async () => {
    const srv = await server();
    const apiKey = srv.keys.streams['macro-wire']!;
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'] });
    await subscription.ready;
    const connections = (await srv.state()).connections;

    const first = await publishRest({
      url: srv.httpUrl,
      apiKey,
      streamId: 'macro-wire',
      content: 'Fed holds rates',
      idempotencyKey: 'rest-1',
    });
    expect(first).toMatchObject({
      duplicate: false,
      idempotencyKey: 'rest-1',
      post: { streamId: 'macro-wire', text: 'Fed holds rates' },
    });
    expect((await srv.state()).connections).toBe(connections);
    // The WebSocket url works as well: it names the same service.
    const again = await publishRest({
      url: srv.url,
      apiKey,
      streamId: 'macro-wire',
      content: 'Fed holds rates',
      idempotencyKey: 'rest-1',
    });
    expect(again).toMatchObject({ duplicate: true, post: { id: first.post.id } });

    const [event] = await (async () => {
      for await (const received of subscription) return [received];
      return [];
    })();
    expect(event).toMatchObject({ type: 'created', post: { id: first.post.id } });
  });

  it('generates the idempotency key, takes releaseAt as a Date', async () => {
    const srv = await server();
    const now = Date.parse((await srv.state()).now);
    const result = await publishRest({
      url: srv.httpUrl,
      apiKey: srv.keys.streams['macro-wire']!,
      streamId: 'macro-wire',
      content: 'later',
      releaseAt: new Date(now + 60_000),
    });
    expect(result.idempotencyKey).toMatch(/^sp-/);
    expect(result.post).toMatchObject({ hidden: true, releaseAt: new Date(now + 60_000).toISOString() });
  });

  it("rejects with the service's code and the HTTP status; a refused key is unauthorized; no key in any message", async () => {
    const srv = await server();
    const otherStreamsKey = srv.keys.streams['crypto-legal']!;
    const forbidden = await publishRest({
      url: srv.httpUrl,
      apiKey: otherStreamsKey,
      streamId: 'macro-wire',
      content: 'x',
    }).catch((error: unknown) => error);
    expect(forbidden).toBeInstanceOf(StreamPostsError);
    expect(forbidden).toMatchObject({ code: 'forbidden', status: 403 });
    expect((forbidden as Error).message).not.toContain(otherStreamsKey);

    const unknownKey = 'sp_not_a_key_of_this_service';
    const unauthorized = await publishRest({
      url: srv.httpUrl,
      apiKey: unknownKey,
      streamId: 'macro-wire',
      content: 'x',
    }).catch((error: unknown) => error);
    expect(unauthorized).toMatchObject({ code: 'unauthorized' });
    expect((unauthorized as Error).message).not.toContain(unknownKey);
  });

  it("a refused key: the service's own words in refusal, apart from the sentence, for a publish and a read", async () => {
    const srv = await server();
    const refused = { by: 'reply', detail: 'HTTP 401: Invalid secret key' };
    const publish = publishRest({ url: srv.httpUrl, apiKey: 'sp_not_a_key', streamId: 'macro-wire', content: 'x' });
    const read = fetchStreams({ url: srv.url, apiKey: 'sp_not_a_key', timeoutMs: 5_000 });
    for (const error of await Promise.all([publish, read].map((attempt) => rejection(attempt)))) {
      expect([error.code, error.refusal, error.status]).toEqual(['unauthorized', refused, 401]);
      expect(error.message).toBe('the service refused the key: HTTP 401: Invalid secret key');
    }
  });

  it('a request never answered: timeout naming the idempotency key it went with', async () => {
    const url = (await silentHttpService()).replace(/^ws/, 'http');
    const error = await rejection(
      publishRest({
        url,
        apiKey: 'sp_some_key',
        streamId: 's',
        content: 'x',
        idempotencyKey: 'rest-k',
        timeoutMs: 300,
      }),
    );
    expect([error.code, error.idempotencyKey]).toEqual(['timeout', 'rest-k']);
    expect(error.message).toContain(
      'the post may have been published: publish it again with idempotencyKey "rest-k" to publish it at most once',
    );
  });

  it('is unreachable where nothing listens, and checks its options like connect', async () => {
    const srv = await server();
    const url = srv.httpUrl;
    await srv.close();
    await expect(
      publishRest({ url, apiKey: 'sp_some_key', streamId: 's', content: 'x', timeoutMs: 1000 }),
    ).rejects.toMatchObject({ code: 'unreachable' });
    await expect(publishRest({ url: 'ftp://example.com', apiKey: 'k', streamId: 's', content: 'x' })).rejects.toThrow(
      TypeError,
    );
    await expect(publishRest({ url, apiKey: 'k', streamId: 's', content: 'x', retries: 3 } as never)).rejects.toThrow(
      /unknown option "retries"/,
    );
    await expect(publishRest({ url, apiKey: 'k', streamId: 's', content: '' })).rejects.toThrow(/content is required/);
  });
});
