import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Logger } from '../../src/server/logger.js';
import {
  connect,
  connectAs,
  KEYS,
  publish,
  startTestServer,
  readByServer,
  type Message,
  type TestClient,
} from '../support/harness.js';

const MiB = 1024 * 1024;
const ALL_STREAMS = ['crypto-legal', 'macro-wire', 'whale-alerts'];

/** A logger that keeps every line, to check what the server wrote. */
function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, log: (level, message, fields) => lines.push(JSON.stringify({ level, message, fields })) };
}

/** Resolves with the close, or rejects if it does not come within `ms`. */
function closedWithin(client: TestClient, ms: number): Promise<{ code: number; reason: string }> {
  return Promise.race([
    client.closed,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not closed within ${ms} ms`)), ms)),
  ]);
}

describe('authentication', () => {
  it.each([
    ['x-api-key header', false],
    ['?apiKey= query parameter', true],
  ])('accepts the key in the %s; connected comes first', async (_how, keyInQuery) => {
    const server = await startTestServer();
    const alice = await connect(server, { key: KEYS.alice, keyInQuery });
    const first = await alice.next();
    expect(first).toEqual({
      event: 'connected',
      data: { message: 'connected', userId: 'alice', streams: ALL_STREAMS, serverTime: expect.any(String) },
    });
    const bob = await connect(server, { key: KEYS.bob, keyInQuery });
    expect((await bob.next()).data).toEqual({
      message: 'connected',
      userId: 'bob',
      streams: ['macro-wire', 'whale-alerts'],
      serverTime: expect.any(String),
    });
  });

  it("a stream key connects as the owner, with the owner's streams and the stream it publishes to", async () => {
    const server = await startTestServer();
    for (const [key, streamId] of [
      [KEYS.cryptoLegal, 'crypto-legal'],
      [KEYS.whaleAlerts, 'whale-alerts'],
    ] as const) {
      const client = await connect(server, { key });
      expect(await client.next()).toEqual({
        event: 'connected',
        data: {
          message: 'connected',
          userId: 'newsdesk',
          streams: ALL_STREAMS,
          streamId,
          serverTime: expect.any(String),
        },
      });
    }
  });

  it("connected.serverTime is the service's clock, admin advances included", async () => {
    const server = await startTestServer();
    const { now } = await server.advanceClock(5 * 24 * 3600 * 1000);
    const client = await connect(server, { key: KEYS.alice });
    const serverTime = Date.parse((await client.next()).data.serverTime);
    expect(serverTime).toBeGreaterThanOrEqual(Date.parse(now));
    expect(serverTime).toBeLessThanOrEqual(Date.parse((await server.state()).now));
  });

  it('connected states the rate limit in our dialect only, and nothing when it is off', async () => {
    const limited = await startTestServer({ rateLimit: 50 });
    const ours = await connect(limited, { key: KEYS.alice });
    expect((await ours.next()).data.rateLimit).toEqual({ perSecond: 50, burst: 100 });
    const hosted = await connect(limited, { key: KEYS.alice, hosted: true });
    expect((await hosted.next()).data).not.toHaveProperty('rateLimit');
    const unlimited = await startTestServer({ rateLimit: 0 });
    const off = await connect(unlimited, { key: KEYS.alice });
    expect((await off.next()).data).not.toHaveProperty('rateLimit');
  });

  it.each([
    ['missing key', undefined, false, 'No secret key provided'],
    ['unknown key in the header', 'sp_not_a_real_key_123', false, 'Invalid secret key'],
    ['unknown key in the query', 'sp_not_a_real_key_456', true, 'Invalid secret key'],
    ['empty key', '', true, 'No secret key provided'],
  ])('%s: one unauthorized error, then close 4401, key never echoed', async (_name, key, keyInQuery, message) => {
    const logger = recordingLogger();
    const server = await startTestServer({ logger });
    const client = await connect(server, key === undefined ? {} : { key, keyInQuery });
    const close = await closedWithin(client, 2000);
    expect(close.code).toBe(4401);
    expect(client.messages).toEqual([{ event: 'error', data: { code: 'unauthorized', message } }]);
    if (key) {
      expect(JSON.stringify(client.messages)).not.toContain(key);
      expect(close.reason).not.toContain(key);
      expect(logger.lines.join('\n')).not.toContain(key);
    }
    expect(logger.lines.length).toBeGreaterThan(0);
  });

  it('an empty x-api-key header does not hide a key in the query', async () => {
    const server = await startTestServer();
    const client = await connect(server, {
      key: KEYS.bob,
      keyInQuery: true,
      wsOptions: { headers: { 'x-api-key': '' } },
    });
    const first = await client.next();
    expect(first.event).toBe('connected');
    expect(first.data.userId).toBe('bob');
  });

  it('never logs a valid key, header or query form', async () => {
    const logger = recordingLogger();
    const server = await startTestServer({ logger });
    await connectAs(server, KEYS.alice, {
      keyInQuery: true,
      path: '/v1/ws/on-stream-post',
      query: { streamIds: 'nope' },
    });
    await connectAs(server, KEYS.bob);
    expect(logger.lines.some((line) => line.includes('connected'))).toBe(true);
    const log = logger.lines.join('\n');
    expect(log).not.toContain(KEYS.alice);
    expect(log).not.toContain(KEYS.bob);
  });
});

describe('paths', () => {
  it.each(['/v1/nope', '/v1/ws/not-a-command', '/v1/wsx', '/'])('%s: HTTP 404 on the upgrade', async (path) => {
    const server = await startTestServer();
    await expect(connect(server, { key: KEYS.alice, path })).rejects.toThrow('upgrade refused with HTTP 404');
  });
});

describe('URL form of commands', () => {
  it('on-stream-post: connected, sub_ack, history, then live posts', async () => {
    const server = await startTestServer();
    const client = await connect(server, {
      key: KEYS.alice,
      path: '/v1/ws/on-stream-post',
      query: { streamIds: 'macro-wire', lastPosts: '1' },
    });
    expect((await client.next()).event).toBe('connected');
    expect(await client.next()).toEqual({
      event: 'sub_ack',
      data: { command: 'on-stream-post', streamIds: ['macro-wire'], lastPosts: 1, history: 1 },
    });
    const history = await client.next();
    expect(history.event).toBe('stream.post.created');
    expect(history.data).toMatchObject({ streamId: 'macro-wire', text: expect.stringContaining('CPI m/m') });
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'live after URL subscribe' });
    expect(await client.next()).toEqual({ event: 'stream.post.created', data: post });
  });

  it.each([false, true])(
    'on-stream-post-tree (hosted dialect: %s): tree items only, oldest first, as Tree Terminal reads them',
    async (hosted) => {
      const server = await startTestServer();
      const client = await connect(server, {
        key: KEYS.alice,
        keyInQuery: true,
        hosted,
        path: '/v1/ws/on-stream-post-tree',
        query: { streamIds: 'crypto-legal', lastPosts: '2' },
      });
      const first = await client.next();
      const second = await client.next();
      expect(first).toMatchObject({
        title: 'Crypto Legal Updates',
        link: 'https://example.org/sec-binance',
        coin: 'BNB',
        type: 'stream-post',
        streamId: 'crypto-legal',
        hidden: false,
      });
      expect(second).toMatchObject({ coin: 'ETH', streamId: 'crypto-legal' });
      expect(String(first['_id']) < String(second['_id'])).toBe(true);
      const post = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'live $SOL item' });
      expect(await client.next()).toMatchObject({ _id: post.id, coin: 'SOL', time: Date.parse(post.createdAt) });
      // Not one envelope: no connected, no sub_ack, nothing with an event.
      expect(client.messages.every((message) => !('event' in message) && typeof message['time'] === 'number')).toBe(
        true,
      );
    },
  );

  it('on-stream-post-tree with a bad argument: closed with 1008 and the reason, no envelope', async () => {
    const server = await startTestServer();
    const client = await connect(server, {
      key: KEYS.alice,
      path: '/v1/ws/on-stream-post-tree',
      query: { streamIds: 'no-such-stream' },
    });
    const close = await client.closed;
    expect(close.code).toBe(1008);
    expect(close.reason).toContain('no-such-stream');
    expect(client.messages).toEqual([]);
  });

  it('hosted dialect: the URL form sends no greeting, its sub_ack comes first', async () => {
    const server = await startTestServer();
    const client = await connect(server, {
      key: KEYS.alice,
      keyInQuery: true,
      hosted: true,
      path: '/v1/ws/on-stream-post',
      query: { streamIds: 'macro-wire', lastPosts: '1' },
    });
    expect(await client.next()).toMatchObject({ event: 'sub_ack', data: { streamIds: ['macro-wire'], lastPosts: 1 } });
    expect(await client.next()).toMatchObject({ event: 'stream.post.created', data: { streamId: 'macro-wire' } });
    expect(client.messages.some((message) => message.event === 'connected')).toBe(false);
  });

  it('hosted dialect: the bare endpoint still greets with connected, data.message "connected"', async () => {
    const server = await startTestServer();
    const client = await connect(server, { key: KEYS.macroWire, hosted: true });
    expect(await client.next()).toMatchObject({ event: 'connected', data: { message: 'connected' } });
  });

  it('add-stream-post with a stream key: connected, then ack; subscribers get the post', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const publisher = await connect(server, {
      key: KEYS.macroWire,
      path: '/v1/ws/add-stream-post',
      query: { streamId: 'macro-wire', content: 'posted through the URL', contentType: 'rawtext' },
    });
    expect((await publisher.next()).event).toBe('connected');
    const ack = await publisher.next();
    expect(ack.event).toBe('ack');
    expect(ack.data).toMatchObject({
      duplicate: false,
      post: { streamId: 'macro-wire', text: 'posted through the URL', hidden: false },
    });
    expect(await alice.nextEvent('stream.post.created')).toEqual({ event: 'stream.post.created', data: ack.data.post });
  });

  it.each([
    ['on-stream-post', KEYS.alice, { lastPosts: 'abc' }, 'invalid-argument'],
    [
      'add-stream-post',
      KEYS.macroWire,
      { streamId: 'macro-wire', content: 'x', contentType: 'html' },
      'invalid-argument',
    ],
  ] as const)('%s with a bad argument: error event, connection stays usable', async (command, key, query, code) => {
    const server = await startTestServer();
    const client = await connect(server, { key, path: `/v1/ws/${command}`, query });
    expect((await client.next()).event).toBe('connected');
    const error = await client.next();
    expect(error).toMatchObject({ event: 'error', data: { code, command } });
    expect(error).not.toHaveProperty('requestId');
    const retry =
      command === 'add-stream-post'
        ? await client.request(command, { streamId: 'macro-wire', content: 'second try', contentType: 'rawtext' })
        : await client.request(command, { streamIds: 'macro-wire' });
    expect(retry.event).toBe(command === 'add-stream-post' ? 'ack' : 'sub_ack');
  });
});

describe('requestId', () => {
  it('is echoed on sub_ack, ack and error, and absent when not sent', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    const publisher = await connectAs(server, KEYS.macroWire);
    const replies: [TestClient, unknown][] = [
      [alice, { event: 'on-stream-post', data: { streamIds: 'macro-wire' } }],
      [alice, { event: 'on-stream-post', data: { streamIds: 'no-such-stream' } }],
      [alice, { event: 'no-such-command', data: {} }],
      [publisher, { event: 'add-stream-post', data: { streamId: 'macro-wire', content: 'a', contentType: 'rawtext' } }],
      [alice, { event: 'add-stream-post', data: { streamId: 'macro-wire', content: 'a', contentType: 'rawtext' } }],
    ];
    const expected = ['sub_ack', 'error', 'error', 'ack', 'error'];
    for (const [i, [client, command]] of replies.entries()) {
      const requestId = `req-${i}`;
      client.send({ ...(command as object), requestId });
      const withId = await client.next((m) => m.event === expected[i] || m.event === 'error');
      expect(withId).toMatchObject({ event: expected[i], requestId });
      client.send(command);
      const without = await client.next((m) => m.event === expected[i] || m.event === 'error');
      expect(without.event).toBe(expected[i]);
      expect(without).not.toHaveProperty('requestId');
    }
  });
});

describe('keep-alive', () => {
  it('sends keep-alive events, keeps answering peers, terminates a silent one', async () => {
    // Long enough for an answering peer to answer on a loaded machine (a peer that has not
    // answered by the next round is terminated), short enough for a test.
    const intervalMs = 500;
    const server = await startTestServer({ keepAliveMs: intervalMs });
    const normal = await connectAs(server, KEYS.alice);
    const raw: string[] = [];
    normal.ws.on('message', (data) => raw.push(data.toString()));
    const silent = await connectAs(server, KEYS.bob, { wsOptions: { autoPong: false } });
    // Which round terminates it is test/faults/keep-alive.test.ts's business: here, that timed rounds do.
    const close = await closedWithin(silent, 40 * intervalMs);
    expect(close.code).toBe(1006);
    for (let i = 0; i < 2; i += 1) await normal.nextEvent('keep-alive');
    expect(raw.filter((text) => text.includes('keep-alive'))[0]).toBe('{"event":"keep-alive","data":{}}');
    expect(normal.ws.readyState).toBe(WebSocket.OPEN);
    expect((await normal.request('on-stream-post', {})).event).toBe('sub_ack');
    expect((await server.state()).connections).toBe(1);
  });

  it('a round over more sessions than one slice pings every one and terminates every silent one', async () => {
    // 250 connections per key: past the default per-key cap. Rounds only when asked for.
    const server = await startTestServer({ keepAliveMs: 3_600_000, maxConnectionsPerKey: 0 });
    const answering = await Promise.all(Array.from({ length: 250 }, () => connectAs(server, KEYS.alice)));
    const silent = await Promise.all(
      Array.from({ length: 250 }, () => connectAs(server, KEYS.bob, { wsOptions: { autoPong: false } })),
    );
    expect(await server.keepAliveRound()).toEqual({ pinged: 500, terminated: 0 });
    await Promise.all(answering.map((client) => client.nextEvent('keep-alive')));
    await Promise.all(answering.map((client) => readByServer(client.ws)));
    expect(await server.keepAliveRound()).toEqual({ pinged: 250, terminated: 250 });
    const closes = await Promise.all(silent.map((client) => closedWithin(client, 10_000)));
    expect(closes.every((close) => close.code === 1006)).toBe(true);
    await Promise.all(answering.map((client) => client.nextEvent('keep-alive')));
    expect(answering.every((client) => client.ws.readyState === WebSocket.OPEN)).toBe(true);
    expect((await server.state()).connections).toBe(250);
  });
});

describe('closing', () => {
  it('server.close() closes every client with 1001', async () => {
    const server = await startTestServer();
    const clients = await Promise.all([
      connectAs(server, KEYS.alice),
      connectAs(server, KEYS.bob),
      connectAs(server, KEYS.whaleAlerts),
    ]);
    await clients[0]!.request('on-stream-post', {});
    await server.close();
    const closes = await Promise.all(clients.map((client) => closedWithin(client, 2000)));
    expect(closes.map((close) => close.code)).toEqual([1001, 1001, 1001]);
  });

  it('accepts no connection once closing has begun, and finishes once the slow peer is done', async () => {
    const server = await startTestServer();
    const slow = await connectAs(server, KEYS.alice);
    // A peer that is slow to answer the close handshake keeps the server closing for a while.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    let closed = false;
    const closing = server.close().then(() => {
      closed = true;
    });
    await expect(connectAs(server, KEYS.bob)).rejects.toThrow();
    expect(server.connectionCount).toBe(1);
    expect(closed).toBe(false);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect((await closedWithin(slow, 2000)).code).toBe(1001);
    await closing;
    expect(server.connectionCount).toBe(0);
  });

  it('a frame over 1 MiB closes with 1009; exactly 1 MiB does not; new connections still work', async () => {
    const server = await startTestServer();
    const atLimit = await connectAs(server, KEYS.alice);
    atLimit.send('x'.repeat(MiB));
    expect((await atLimit.nextEvent('error')).data.code).toBe('bad-json');
    expect(atLimit.ws.readyState).toBe(WebSocket.OPEN);

    const tooBig = await connectAs(server, KEYS.alice);
    tooBig.send(JSON.stringify({ event: 'on-stream-post', data: { pad: 'x'.repeat(MiB) } }));
    expect((await closedWithin(tooBig, 2000)).code).toBe(1009);

    const after = await connectAs(server, KEYS.bob);
    const ack: Message = await after.request('on-stream-post', { streamIds: 'macro-wire' });
    expect(ack.event).toBe('sub_ack');
    expect((await atLimit.request('on-stream-post', {})).event).toBe('sub_ack');
  });
});
