import { createServer, type Socket } from 'node:net';
import { CONNECTED, scriptedService } from '../support/hostile.js';
import { proxyTo } from '../support/proxy.js';
import { describe, expect, it } from 'vitest';
import { connect, STREAM_POSTS_ERROR_CODES, StreamPostsError } from '../../src/index.js';
import { client, rejection } from '../support/api.js';
import { afterTest, startTestServer as server } from '../support/harness.js';
import { until } from '../support/poll.js';

/** A TCP port that accepts connections and never answers: every wait on it runs into its timeout. */
async function silentPort(): Promise<number> {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  afterTest(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  return (silent.address() as { port: number }).port;
}

describe('errors', () => {
  it('lists the protocol codes and the client codes', () => {
    expect(STREAM_POSTS_ERROR_CODES).toEqual(
      expect.arrayContaining([
        'unauthorized',
        'forbidden',
        'rate-limited',
        'internal',
        'timeout',
        'unreachable',
        'closed',
        'overflow',
      ]),
    );
  });

  it('unauthorized: a refused key, never echoed, in the header or the query', async () => {
    const srv = await server();
    for (const authQuery of [false, true]) {
      const error = await rejection(connect({ url: srv.url, apiKey: 'sk-wrong-secret-123', authQuery }));
      expect(error.code).toBe('unauthorized');
      expect(error.message).not.toContain('sk-wrong-secret-123');
      expect(error.cause).toBeDefined();
    }
  });

  it("unauthorized over WebSocket: the service's own words in refusal, apart from the sentence, no key in them", async () => {
    const srv = await server();
    const refused = await rejection(connect({ url: srv.url, apiKey: 'sk-wrong-secret-123' }));
    expect(refused.refusal).toEqual({ by: 'reply', detail: 'Invalid secret key' });
    expect(refused.message).toBe('the service refused the key: Invalid secret key');

    const key = 'sp_secret_key_123456';
    const echoing = await scriptedService((ws) =>
      ws.send(JSON.stringify({ event: 'error', data: { code: 'unauthorized', message: `no key ${key}` } })),
    );
    const echoed = await rejection(connect({ url: echoing.url, apiKey: key }));
    expect([echoed.code, echoed.refusal]).toEqual(['unauthorized', { by: 'reply', detail: 'no key [redacted]' }]);
    expect(echoed.message).toBe('the service refused the key: no key [redacted]');

    const closing = await scriptedService((ws) => ws.close(4401, `no key ${key}`));
    const closed = await rejection(connect({ url: closing.url, apiKey: key }));
    expect([closed.code, closed.refusal]).toEqual([
      'unauthorized',
      { by: 'close', detail: 'close 4401, no key [redacted]' },
    ]);
    expect(closed.message).toBe('the service refused the key (close 4401, no key [redacted])');
  });

  it('unreachable: nothing listening', async () => {
    const srv = await server();
    const url = srv.url;
    await srv.close();
    const error = await rejection(connect({ url, apiKey: 'sp_demo_reader_alice' }));
    expect(error.code).toBe('unreachable');
  });

  it('timeout: no answer within timeoutMs', async () => {
    const port = await silentPort();
    const error = await rejection(
      connect({ url: `ws://127.0.0.1:${port}`, apiKey: 'sp_demo_reader_alice', timeoutMs: 100 }),
    );
    expect(error.code).toBe('timeout');
    expect(error.message).toContain('timeoutMs');
  });

  it('a service that upgrades and never says connected: connect resolves all the same, without its facts', async () => {
    const service = await scriptedService(() => {});
    const silent = await connect({ url: service.url, apiKey: 'sp_demo_reader_alice', timeoutMs: 200 });
    afterTest(() => silent.close());
    expect([silent.userId, silent.streams, silent.streamId, silent.serverTime]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('limit-exceeded: a first word refusing the connection rejects connect', async () => {
    const service = await scriptedService((ws) => {
      ws.send(JSON.stringify({ event: 'error', data: { code: 'limit-exceeded', message: 'too many connections' } }));
      ws.close(1008, 'too many connections');
    });
    const error = await rejection(connect({ url: service.url, apiKey: 'sp_demo_reader_alice' }));
    expect(error.code).toBe('limit-exceeded');
  });

  it('timeout: a publish not acknowledged within timeoutMs names its idempotency key', async () => {
    const srv = await server();
    const proxy = await proxyTo(srv.port);
    const owner = await client({ url: proxy.url, apiKey: srv.keys.streams['macro-wire']!, timeoutMs: 200 });
    proxy.hold();
    const error = await rejection(owner.publish({ streamId: 'macro-wire', content: 'x', idempotencyKey: 'retry-me' }));
    expect(error.code).toBe('timeout');
    expect(error.message).toContain('retry-me');
  });

  it('a publish whose ack did not come: the client reconnects and resends it, so publishing again with its key gives the one post', async () => {
    const srv = await server();
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']!, timeoutMs: 300 });
    const before = (await srv.state()).posts;
    const [first] = srv.connections();
    await srv.faults.add({ type: 'go-silent', scope: { connection: first!.id } });
    // The publish's own wait and the connection's wait for its reply are both timeoutMs: the
    // publish rejects with `timeout` when its own runs out first, or the connection's drops
    // the silent socket first and the resend's ack answers it. Either way the post is sent
    // again on a new connection, once.
    const once = await owner.publish({ streamId: 'macro-wire', content: 'once', idempotencyKey: 'k-once' }).then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
    if (once.result === undefined) {
      expect(once.error).toBeInstanceOf(StreamPostsError);
      expect((once.error as StreamPostsError).code).toBe('timeout');
    } else expect(once.result.duplicate).toBe(false);
    // Published again only once the resend has landed, or the two would race on a busy
    // machine (the new publish on the silent socket, its own timeout against the reconnect).
    await until(async () => (await srv.state()).posts === before + 1, 'the resent post');
    const again = await owner.publish({ streamId: 'macro-wire', content: 'once', idempotencyKey: 'k-once' });
    expect(again.duplicate).toBe(true);
    expect(srv.connections().filter((connection) => connection.id !== first!.id)).toHaveLength(1);
    expect((await srv.state()).posts).toBe(before + 1);
  });

  it("a service's words come through as data, with the key cut out", async () => {
    const key = 'sp_secret_key_123456';
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const { requestId } = JSON.parse(String(data)) as { requestId: string };
        const message = `key ${key} may not \u001b[2Jpost here`;
        ws.send(
          JSON.stringify({
            event: 'error',
            requestId,
            data: { code: 'forbidden', message, command: 'add-stream-post' },
          }),
        );
      });
    });
    const owner = await client({ url: service.url, apiKey: key });
    const error = await rejection(owner.publish({ streamId: 's', content: 'x' }));
    expect(error.code).toBe('forbidden');
    expect(error.message).toBe('key [redacted] may not \u001b[2Jpost here');
  });

  it("the service's codes: forbidden, invalid-argument, not-found", async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    expect((await rejection(reader.publish({ streamId: 'macro-wire', content: 'x' }))).code).toBe('forbidden');
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    expect((await rejection(owner.publish({ streamId: 'macro-wire', content: 'x', releaseAt: 'soon' }))).code).toBe(
      'invalid-argument',
    );
    const subscription = reader.subscribe({ streamIds: ['no-such-stream'] });
    expect((await rejection(subscription.ready)).code).toBe('not-found');
    const iteration = (async () => {
      for await (const _event of subscription) void _event;
    })();
    expect((await rejection(iteration)).code).toBe('not-found');
    // A refused subscription ends itself only: the shared connection still publishes.
    await owner.publish({ streamId: 'macro-wire', content: 'still here' });
  });

  it('bad options throw TypeError / RangeError naming the option', async () => {
    const srv = await server();
    await expect(connect({ url: 'http//nope', apiKey: 'k' })).rejects.toThrow(/url/);
    await expect(connect({ url: srv.url, apiKey: '' })).rejects.toThrow(/apiKey/);
    await expect(connect({ url: srv.url, apiKey: 'k', timeoutMs: 0 })).rejects.toThrow(RangeError);
    await expect(connect({ url: srv.url, apiKey: 'k', reconect: false } as never)).rejects.toThrow(
      /unknown option "reconect"/,
    );
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    expect(() => reader.subscribe({ lastPosts: 101 })).toThrow(RangeError);
    expect(() => reader.subscribe({ format: 'xml' as 'post' })).toThrow(/format/);
    await expect(reader.publish({ streamId: 'macro-wire', content: 7 as unknown as string })).rejects.toThrow(
      /content/,
    );
    await expect(
      reader.publish({ streamId: 'macro-wire', content: 'x', releaseAt: new Date(Number.NaN) }),
    ).rejects.toThrow(/releaseAt/);
  });

  it('overflow: a consumer that falls bufferSize events behind', async () => {
    const srv = await server();
    const reader = await client({ url: srv.url, apiKey: srv.keys.readers['alice']! });
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const subscription = reader.subscribe({ streamIds: ['macro-wire'], bufferSize: 2 });
    await subscription.ready;
    for (const content of ['a', 'b', 'c']) await owner.publish({ streamId: 'macro-wire', content });
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of subscription) seen.push(event.post.text ?? '');
      })(),
    );
    expect(error.code).toBe('overflow');
    expect(seen).toEqual(['a', 'b']);
  });
});
