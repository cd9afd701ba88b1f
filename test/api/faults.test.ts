import { describe, expect, it } from 'vitest';
import type { ClientState, FaultInput, StreamPostsClient } from '../../src/index.js';
import { client, take } from '../support/api.js';
import { startTestServer as startServer } from '../support/harness.js';

/** What a bot does: publishes a burst, each post with an idempotency key of its own, and waits for every ack. */
function publishBurst(bot: StreamPostsClient, count: number) {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      bot.publish({ streamId: 'macro-wire', content: `burst ${i}`, idempotencyKey: `burst-${i}` }),
    ),
  );
}

describe('server.faults', () => {
  it('the README example: the service drops the bot with 1012 mid-burst and loses an ack; every post is stored once', async () => {
    const server = await startServer();
    const states: ClientState[] = [];
    const bot = await client({
      url: server.url,
      apiKey: server.keys.streams['macro-wire']!,
      timeoutMs: 1000,
      onState: (state) => states.push(state),
    });
    const watcher = await client({ url: server.url, apiKey: server.keys.readers['alice']! });
    const seen = watcher.subscribe({ streamIds: ['macro-wire'] });
    await seen.ready;

    const burst = publishBurst(bot, 20); // the bot's own code, running
    await server.faults.add({ type: 'drop-acks', count: 1 }); // an ack is lost…
    await server.faults.add({ type: 'close', code: 1012, reason: 'service restart' }); // …and the service drops us mid-burst

    const results = await burst;
    expect(states).toContainEqual(
      expect.objectContaining({ kind: 'reconnecting', reason: 'close 1012, service restart' }),
    );
    expect(server.faults.list()).toEqual([]); // the lost ack was one of the burst's
    expect(results.map((result) => result.post.text)).toEqual(Array.from({ length: 20 }, (_, i) => `burst ${i}`));
    const delivered = (await take(seen[Symbol.asyncIterator](), 20)).map((event) => event.post.text);
    expect(delivered.sort()).toEqual(results.map((result) => result.post.text).sort());
    const stored = await fetch(`${server.httpUrl}/v1/streams/macro-wire/posts?limit=100`, {
      headers: { 'x-api-key': server.keys.readers['alice']! },
    });
    const texts = ((await stored.json()) as { posts: { text: string }[] }).posts.map((post) => post.text);
    expect(texts.filter((text) => text.startsWith('burst ')).sort()).toEqual(delivered.sort());
  });

  it('adds, lists and clears; state() shows them too', async () => {
    const server = await startServer();
    const pause = await server.faults.add({ type: 'pause-deliveries', scope: { user: 'bob' } });
    expect(pause).toEqual({
      id: 'f1',
      type: 'pause-deliveries',
      scope: { user: 'bob' },
      createdAt: expect.any(String),
    });
    const slow = await server.faults.add({ type: 'delay-deliveries', delayMs: 10, durationMs: 60_000 });
    expect(slow).toMatchObject({ id: 'f2', jitterMs: 0, durationMs: 60_000, expiresAt: expect.any(String) });
    expect(server.faults.list().map((fault) => fault.id)).toEqual(['f1', 'f2']);
    expect((await server.state()).faults).toHaveLength(2);
    expect(server.faults.clear('f1')).toBe(1);
    expect(server.faults.clear('f1')).toBe(0);
    expect(server.faults.clear()).toBe(1);
    expect(server.faults.list()).toEqual([]);
    await server.faults.add({ type: 'stop-pongs' });
    await server.reset();
    expect(server.faults.list()).toEqual([]);
  });

  it('a bad fault throws TypeError naming the field, and nothing is added', async () => {
    const server = await startServer();
    await expect(server.faults.add({ type: 'close', code: 999 })).rejects.toThrow(
      new TypeError('faults.add: code must be an integer from 1000 to 4999'),
    );
    await expect(server.faults.add({ type: 'nope' } as unknown as FaultInput)).rejects.toThrow(TypeError);
    await expect(server.faults.add({ type: 'go-silent', scope: { key: 'sp_not_a_key_at_all' } })).rejects.toThrow(
      'faults.add: scope.key is not a key of this service',
    );
    expect(() => server.faults.clear(7 as unknown as string)).toThrow(TypeError);
    expect(server.faults.list()).toEqual([]);
  });
});

describe('server.connections()', () => {
  it('lists the open connections; connectionCount counts them', async () => {
    const server = await startServer();
    expect(server.connections()).toEqual([]);
    const reader = await client({ url: server.url, apiKey: server.keys.readers['alice']! });
    await reader.subscribe({ streamIds: ['macro-wire'], format: 'tree' }).ready;
    expect(server.connections()).toEqual([
      {
        id: 'c1',
        user: 'alice',
        stream: null,
        kind: 'user',
        subscriptions: [{ streamIds: ['macro-wire'], format: 'tree' }],
        bufferedBytes: 0,
        connectedAt: expect.any(String),
        remoteAddress: expect.stringContaining('127.0.0.1'),
      },
    ]);
    expect(server.connectionCount).toBe(1);
  });
});
