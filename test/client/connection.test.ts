import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WebSocketServer, type AddressInfo } from 'ws';
import { runBatch, type BatchResult } from '../../src/cli/batch.js';
import { Connection, type ConnectionState } from '../../src/client/connection.js';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import type { ClientError } from '../../src/client/errors.js';
import { Publisher } from '../../src/client/publisher.js';
import { Subscription, type Delivery } from '../../src/client/subscription.js';
import type { StreamPostsServer } from '../../src/index.js';
import { adminState, advanceClock, afterTest, KEYS, publish, startTestServer } from '../support/harness.js';
import { until } from '../support/poll.js';
import { proxyTo, type TcpProxy } from '../support/proxy.js';

const FAST = { backoff: { initialMs: 20, maxMs: 200 } } as const;

async function throughProxy(server: StreamPostsServer): Promise<{ proxy: TcpProxy; url: string }> {
  const proxy = await proxyTo(server.port);
  return { proxy, url: proxy.url };
}

function follow(
  url: string,
  key: string,
  lastPosts = 0,
  command: 'on-stream-post' | 'on-stream-post-tree' = 'on-stream-post',
) {
  const deliveries: Delivery[] = [];
  const states: ConnectionState[] = [];
  let subscriptions = 0;
  const subscription = new Subscription(
    { endpoint: resolveEndpoint(url), apiKey: key, ...FAST },
    { command, streamIds: undefined, lastPosts },
    {
      onDelivery: (delivery) => deliveries.push(delivery),
      onState: (state) => states.push(state),
      onSubscribed: () => {
        subscriptions += 1;
      },
    },
  );
  const done = subscription.start();
  afterTest(() => subscription.close());
  return { subscription, deliveries, states, done, subscriptions: () => subscriptions };
}

const ids = (deliveries: Delivery[]) =>
  deliveries.map((delivery) => (delivery.format === 'post' ? delivery.post.id : delivery.id));

/**
 * Publishes a post on macro-wire (followed by every reader here) and waits for it: what
 * the reader got before it is all it will get of what came earlier. Resolves to its id.
 */
async function publishMarker(server: StreamPostsServer, deliveries: Delivery[]): Promise<string> {
  const marker = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
  await until(() => ids(deliveries).includes(marker.id), 'the marker');
  return marker.id as string;
}

describe('Subscription across drops', () => {
  it('shows posts published before, during and after an outage exactly once, and no history from before it started', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const reader = follow(url, KEYS.alice);
    await until(() => reader.subscriptions() === 1, 'the first subscription');
    const a = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'A' });
    await until(() => reader.deliveries.length === 1, 'A');
    proxy.cut();
    const b = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'B' });
    await until(() => reader.subscriptions() === 2, 'the resubscription');
    const c = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'C' });
    // Anything sent twice would arrive before a post published after C.
    const marker = await publishMarker(server, reader.deliveries);
    expect(ids(reader.deliveries)).toEqual([a.id, b.id, c.id, marker]);
    expect(reader.states.some((state) => state.kind === 'reconnecting')).toBe(true);
  });

  it('with --last N, shows that history once and nothing of it again after a reconnect', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const reader = follow(url, KEYS.alice, 1);
    await until(() => reader.subscriptions() === 1 && reader.deliveries.length === 3, 'one seed post per stream');
    const history = ids(reader.deliveries);
    proxy.cut();
    await until(() => reader.subscriptions() === 2, 'the resubscription');
    const d = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'D' });
    const marker = await publishMarker(server, reader.deliveries);
    expect(ids(reader.deliveries)).toEqual([...history, d.id, marker]);
  });

  it('shows a hidden post released during the outage as released, with its text', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const reader = follow(url, KEYS.alice);
    await until(() => reader.subscriptions() === 1, 'the first subscription');
    const releaseAt = new Date(Date.now() + 3_600_000).toISOString();
    const hidden = await publish(server, KEYS.cryptoLegal, {
      streamId: 'crypto-legal',
      content: 'embargoed',
      releaseAt,
    });
    await until(() => reader.deliveries.length === 1, 'the hidden post');
    proxy.cut();
    await advanceClock(server, 2 * 3_600_000);
    await until(() => reader.deliveries.length === 2, 'the release');
    const [created, released] = reader.deliveries as Extract<Delivery, { format: 'post' }>[];
    expect([created!.kind, created!.post.hidden, created!.post.text]).toEqual(['created', true, null]);
    expect([released!.kind, released!.post.id, released!.post.text]).toEqual(['released', hidden.id, 'embargoed']);
  });

  it('tree subscriptions replay and deduplicate by _id too', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const reader = follow(url, KEYS.bob, 2, 'on-stream-post-tree');
    await until(
      () => reader.subscriptions() === 1 && reader.deliveries.length === 2,
      "bob's history (macro-wire, and SOL on whale-alerts)",
    );
    proxy.cut();
    const e = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'E' });
    const marker = await publishMarker(server, reader.deliveries);
    expect(ids(reader.deliveries).slice(2)).toEqual([e.id, marker]);
    expect(new Set(ids(reader.deliveries)).size).toBe(4);
  });

  it('ends with "refused" when the service refuses the subscription', async () => {
    const server = await startTestServer();
    const subscription = new Subscription(
      { endpoint: resolveEndpoint(server.url), apiKey: KEYS.bob },
      { command: 'on-stream-post', streamIds: ['crypto-legal'], lastPosts: 0 },
      { onDelivery: () => {} },
    );
    await expect(subscription.start()).rejects.toMatchObject({ kind: 'refused', code: 'forbidden' });
  });
});

describe('Connection failures', () => {
  it('an unknown key ends with "unauthorized" and is never retried', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const connection = new Connection({ endpoint: resolveEndpoint(url), apiKey: 'sp_wrong_key', ...FAST }).start();
    const error = (await connection.done.catch((caught: unknown) => caught)) as ClientError;
    expect([error.kind, error.code]).toEqual(['unauthorized', 'unauthorized']);
    expect(error.message).not.toContain('sp_wrong_key');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(proxy.connections).toBe(1);
  });

  it('an unknown key sent as ?apiKey= is refused the same way and not echoed', async () => {
    const server = await startTestServer();
    const connection = new Connection({
      endpoint: resolveEndpoint(server.url),
      apiKey: 'sp_wrong_query_key',
      authQuery: true,
    }).start();
    const error = (await connection.done.catch((caught: unknown) => caught)) as ClientError;
    expect(error.kind).toBe('unauthorized');
    expect(error.message).not.toContain('sp_wrong_query_key');
  });

  it('a path that is not a Stream Posts endpoint reports the HTTP status of the upgrade', async () => {
    const server = await startTestServer();
    const connection = new Connection({
      endpoint: resolveEndpoint(`${server.url}/elsewhere`),
      apiKey: KEYS.alice,
    }).start();
    await expect(connection.done).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('HTTP 404'),
    });
  });

  it('nothing listening: "unreachable" at once, without retrying', async () => {
    const server = await startTestServer();
    const url = server.url;
    await server.close();
    const states: ConnectionState[] = [];
    const connection = new Connection(
      { endpoint: resolveEndpoint(url), apiKey: KEYS.alice },
      { onState: (state) => states.push(state) },
    ).start();
    await expect(connection.done).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('connection refused'),
    });
    expect(states.map((state) => state.kind)).toEqual(['connecting']);
  });

  it('with reconnect off, a drop ends the connection', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    let ready = false;
    const connection = new Connection(
      { endpoint: resolveEndpoint(url), apiKey: KEYS.alice, reconnect: false },
      { onReady: () => (ready = true) },
    ).start();
    await until(() => ready, 'ready');
    proxy.cut();
    await expect(connection.done).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('ended'),
    });
  });

  it('a peer that stops answering pings is dropped and reconnected', async () => {
    // A bare server that never answers pings but otherwise behaves.
    const silent = new WebSocketServer({ port: 0, autoPong: false });
    afterTest(() => new Promise((resolve) => silent.close(() => resolve())));
    silent.on('connection', (ws) =>
      ws.send(JSON.stringify({ event: 'connected', data: { message: 'connected', userId: 'u', streams: [] } })),
    );
    await new Promise((resolve) => silent.once('listening', resolve));
    const url = `ws://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const states: ConnectionState[] = [];
    const connection = new Connection(
      { endpoint: resolveEndpoint(url), apiKey: 'k', heartbeat: { intervalMs: 50, timeoutMs: 50 }, ...FAST },
      { onState: (state) => states.push(state) },
    ).start();
    afterTest(() => connection.close());
    await until(() => states.filter((state) => state.kind === 'ready').length >= 2, 'a second connection');
    const reconnecting = states.find((state) => state.kind === 'reconnecting');
    expect(reconnecting).toMatchObject({ reason: expect.stringContaining('no answer to a ping') });
  });
});

describe('Connection over several addresses', () => {
  it('a drop moves to the next address at once; only a whole round of failures waits, longer each round', async () => {
    const server = await startTestServer();
    const [first, second] = [await throughProxy(server), await throughProxy(server)];
    const states: ConnectionState[] = [];
    const connection = new Connection(
      {
        endpoint: [resolveEndpoint(first.url), resolveEndpoint(second.url)],
        apiKey: KEYS.alice,
        backoff: { initialMs: 20, maxMs: 200 },
        random: () => 1,
      },
      { onState: (state) => states.push(state) },
    ).start();
    afterTest(() => connection.close());
    const readies = () => states.filter((state) => state.kind === 'ready').length;
    await until(() => readies() === 1, 'the first connection');
    first.proxy.refuse(true);
    second.proxy.refuse(true);
    first.proxy.cut();
    const delays = () => states.flatMap((state) => (state.kind === 'reconnecting' ? [state.delayMs] : []));
    await until(() => delays().length >= 4, 'four failures in a row');
    first.proxy.refuse(false);
    await until(() => readies() === 2, 'the connection back');
    expect(delays()).toEqual([0, 20, 0, 40]);
    const urls = states.flatMap((state) => (state.kind === 'connecting' ? [state.url] : []));
    const [a, b] = [`${first.url}/v1/ws`, `${second.url}/v1/ws`];
    expect(urls).toEqual([a, b, a, b, a]);
  });
});

describe('Publisher across drops', () => {
  it('a batch whose connection is cut twice publishes every post exactly once', async () => {
    const server = await startTestServer();
    const { proxy, url } = await throughProxy(server);
    const before = (await adminState(server)).posts as number;
    const publisher = new Publisher({ endpoint: resolveEndpoint(url), apiKey: KEYS.cryptoLegal, ...FAST });
    afterTest(() => publisher.close());
    await publisher.start();
    const total = 400;
    async function* lines() {
      for (let index = 0; index < total; index++) {
        // Input is read ahead of the acks: the second cut waits for the first one's reconnection.
        if (index === 260) await until(() => proxy.connections >= 2 && proxy.open > 0, 'the first reconnection');
        if (index === 120 || index === 260) proxy.cut();
        yield `${JSON.stringify({ content: `post ${index}` })}\n`;
        if (index % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
    }
    const results: BatchResult[] = [];
    const summary = await runBatch({
      input: Readable.from(lines()),
      defaults: { streamId: 'crypto-legal', contentType: 'rawtext' },
      window: 32,
      send: (args) => publisher.publish(args),
      onResult: (result) => results.push(result),
    });
    expect(summary).toEqual({ published: total, failed: 0, timedOut: 0 });
    expect(results.map((result) => result.line)).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    expect(proxy.connections).toBeGreaterThanOrEqual(3);
    expect((await adminState(server)).posts - before).toBe(total);
  });

  it('rate-limited posts are retried with the same key until they go through', async () => {
    const server = await startTestServer({ rateLimit: 20 });
    const before = (await adminState(server)).posts as number;
    const publisher = new Publisher({ endpoint: resolveEndpoint(server.url), apiKey: KEYS.cryptoLegal });
    afterTest(() => publisher.close());
    await publisher.start();
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        publisher.publish({
          streamId: 'crypto-legal',
          content: `burst ${index}`,
          contentType: 'rawtext',
          releaseAt: null,
          customTarget: null,
          idempotencyKey: `burst-${index}`,
        }),
      ),
    );
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect((await adminState(server)).posts - before).toBe(60);
  });
});
