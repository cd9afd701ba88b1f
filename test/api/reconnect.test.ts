import { describe, expect, it } from 'vitest';
import { proxyTo } from '../support/proxy.js';
import { client, libraryClient, take } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('reconnect', () => {
  it('after a drop, delivers what was published and released meanwhile, once, and publishes again', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const bob = await client({ url: proxy.url, apiKey: srv.keys.streams['macro-wire']! });
    const direct = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const subscription = bob.subscribe({ streamIds: ['macro-wire'] });
    await subscription.ready;
    const events = subscription[Symbol.asyncIterator]();

    const now = Date.parse((await srv.state()).now);
    const hidden = await direct.publish({ streamId: 'macro-wire', content: 'embargoed', releaseAt: now + 60_000 });
    const before = await direct.publish({ streamId: 'macro-wire', content: 'before' });
    expect((await take(events, 2)).map((event) => [event.type, event.post.id])).toEqual([
      ['created', hidden.post.id],
      ['created', before.post.id],
    ]);

    proxy.refuse(true);
    proxy.cut();
    const during = await direct.publish({ streamId: 'macro-wire', content: 'during' });
    await srv.advanceClock(60_000);
    // A publish made while the connection is down is sent once it is back.
    const queued = bob.publish({ streamId: 'macro-wire', content: 'queued', idempotencyKey: 'queued-1' });
    proxy.refuse(false);

    const after = await take(events, 3);
    expect(after.map((event) => [event.type, event.post.id])).toEqual(
      expect.arrayContaining([
        ['released', hidden.post.id],
        ['created', during.post.id],
      ]),
    );
    const { post, duplicate } = await queued;
    expect(duplicate).toBe(false);
    expect(after.map((event) => event.post.id)).toContain(post.id);
    expect(new Set(after.map((event) => `${event.type}:${event.post.id}`)).size).toBe(3);
    expect(after.map((event) => event.post.id)).not.toContain(before.post.id);
  });

  it('with reconnect: false a drop ends the subscription with unreachable', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const reader = await client({ url: proxy.url, apiKey: srv.keys.readers['alice']!, reconnect: false });
    const subscription = reader.subscribe();
    await subscription.ready;
    proxy.cut();
    const ended = (async () => {
      for await (const _event of subscription) void _event;
    })();
    await expect(ended).rejects.toMatchObject({ code: 'unreachable' });
  });
});

describe('onState', () => {
  it('reports connecting and ready, then a drop: reconnecting (no key in the reason), connecting, ready again', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const apiKey = srv.keys.readers['alice']!;
    const { client: reader, states, until } = await libraryClient(srv, apiKey, { url: proxy.url });
    expect(states.map((state) => state.kind)).toEqual(['connecting', 'ready']);
    expect(states[1]).toEqual({ kind: 'ready', info: { reconnected: false } });
    // Ready as the socket opened; `connected`, heard before connect resolved, says whom the key acts as.
    expect(reader.userId).toBe('alice');
    proxy.cut();
    await until(() => states.length >= 5);
    expect(states.slice(2).map((state) => state.kind)).toEqual(['reconnecting', 'connecting', 'ready']);
    expect(states[4]).toMatchObject({ kind: 'ready', info: { reconnected: true } });
    expect(JSON.stringify(states)).not.toContain(apiKey);
  });

  it('must be a function', async () => {
    const srv = await server();
    await expect(client({ url: srv.url, apiKey: 'k', onState: 'log' as never })).rejects.toThrow(
      /onState must be a function/,
    );
  });
});
