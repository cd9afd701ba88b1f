import { describe, expect, it } from 'vitest';
import { proxyTo } from '../support/proxy.js';
import type { SubscribedInfo } from '../../src/index.js';
import { client, take } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('subscribe: highWaterMark', () => {
  it('a consumer that does not pull stops the reading: what is not read waits at the service, which finds the reader slow', async () => {
    let sawSlow!: () => void;
    const slow = new Promise<void>((resolve) => {
      sawSlow = resolve;
    });
    let slowSeen = false;
    void slow.then(() => {
      slowSeen = true;
    });
    // No idempotency cap: the posts it takes to fill the socket buffers on the way must all be accepted.
    const srv = await server({
      maxBufferedBytes: 1024 * 1024,
      maxIdempotencyBytes: 0,
      maxIdempotencyKeys: 0,
      logger: { log: (_level, message) => (message === 'closing slow consumer' ? sawSlow() : undefined) },
    });
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'], highWaterMark: 1 });
    await subscription.ready;
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    // Publishing until the service gives up on the reader: without the pause the reader
    // would take every post into its queue of 10000 and the service would never see it slow.
    for (let index = 0; !slowSeen; index++)
      await publisher.publish({ streamId: 'macro-wire', content: `${index} ${'x'.repeat(60_000)}` });
    await slow;
  });

  it('reading resumes once the consumer has taken what was queued: every post arrives, in order', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'], highWaterMark: 1, bufferSize: 1 });
    await subscription.ready;
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const published = [];
    for (const content of ['one', 'two', 'three', 'four'])
      published.push((await publisher.publish({ streamId: 'macro-wire', content })).post.id);
    const events = await take(subscription[Symbol.asyncIterator](), 4);
    expect(events.map((event) => event.post.id)).toEqual(published);
  });

  it('is checked like the other options', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    expect(() => reader.subscribe({ highWaterMark: 0 })).toThrow(RangeError);
    expect(() => reader.subscribe({ highWaterMark: 5, bufferSize: 4 })).toThrow(/highWaterMark/);
    expect(() => reader.subscribe({ onSubscribed: 'yes' as never })).toThrow(TypeError);
  });
});

describe('subscribe: onSubscribed', () => {
  it('is told the streams on the first acknowledgement and again, reconnected, after a drop', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const reader = await client({ url: proxy.url, apiKey: srv.keys.readers['alice']! });
    const acks: SubscribedInfo[] = [];
    let again!: () => void;
    const resubscribed = new Promise<void>((resolve) => {
      again = resolve;
    });
    const subscription = reader.subscribe({
      streamIds: ['macro-wire'],
      onSubscribed: (info) => {
        acks.push(info);
        if (info.reconnected) again();
      },
    });
    expect(await subscription.ready).toEqual({ streamIds: ['macro-wire'] });
    expect(acks).toEqual([{ streamIds: ['macro-wire'], reconnected: false }]);
    proxy.cut();
    await resubscribed;
    expect(acks).toEqual([
      { streamIds: ['macro-wire'], reconnected: false },
      { streamIds: ['macro-wire'], reconnected: true },
    ]);
  });
});

describe('a tree feed url (…/graphql?format=tree)', () => {
  it('connecting subscribes: subscribe({ format: "tree" }) gives its items; other formats and streamIds are refused', async () => {
    const srv = await server();
    const reader = await client({
      url: `${srv.url}/graphql?format=tree&streamIds=macro-wire`,
      apiKey: srv.keys.readers['alice']!,
    });
    expect(() => reader.subscribe()).toThrow(TypeError);
    expect(() => reader.subscribe({ format: 'tree', streamIds: ['macro-wire'] })).toThrow(/streamIds/);
    const subscription = reader.subscribe({ format: 'tree' });
    expect(await subscription.ready).toEqual({ streamIds: [] });
    const publisher = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const { post } = await publisher.publish({ streamId: 'macro-wire', content: 'Fed holds rates' });
    const [event] = await take(subscription[Symbol.asyncIterator](), 1);
    expect(event).toMatchObject({ type: 'created', format: 'tree', item: { _id: post.id, streamId: 'macro-wire' } });
  });
});
