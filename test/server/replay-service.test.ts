import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { StreamPostsError } from '../../src/index.js';
import { CLOSE_NO_RECORDED_REPLY } from '../../src/protocol/close-codes.js';
import type { RecordedConnection } from '../../src/protocol/recording.js';
import { http, KEYS, startTestServer } from '../support/harness.js';
import {
  exchange,
  fromClient,
  fromServer,
  openReplayed,
  recordedTime,
  recording,
  recordingFile,
  wsConnection,
} from '../support/recordings.js';

const RELEASE_MS = 60_000;

/** A publisher's session: a hidden post acknowledged, seen hidden, then released a minute later. */
const hiddenPost = recording({
  connections: [
    wsConnection(1, [
      fromServer(0, { event: 'connected', data: { message: 'connected', serverTime: recordedTime(0) } }),
      fromClient(50, { event: 'on-stream-post', data: { streamIds: 'macro-wire' } }),
      fromServer(52, { event: 'sub_ack', data: { streamIds: ['macro-wire'] } }),
      fromClient(100, {
        event: 'add-stream-post',
        data: {
          streamId: 'macro-wire',
          content: 'later',
          contentType: 'rawtext',
          releaseAt: recordedTime(100 + RELEASE_MS),
          idempotencyKey: 'recorded-key',
        },
        requestId: 'p',
      }),
      fromServer(104, {
        event: 'ack',
        data: { post: { id: 'h1', hidden: true, releaseAt: recordedTime(100 + RELEASE_MS) } },
        requestId: 'p',
      }),
      fromServer(105, {
        event: 'stream.post.created',
        data: { id: 'h1', hidden: true, releaseAt: recordedTime(100 + RELEASE_MS) },
      }),
      fromServer(100 + RELEASE_MS, { event: 'stream.post.released', data: { id: 'h1', text: 'later' } }),
    ]),
  ],
});

describe('serve --replay: timing and the admin clock', () => {
  it('keeps a hidden post hidden until its shifted release, which moving the clock brings at once', async () => {
    const server = await startTestServer({ replay: hiddenPost });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.macroWire}`);
    await bot.waitFor((m) => m['event'] === 'connected', 'connected', 10_000);
    bot.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire' } }));
    await bot.waitFor((m) => m['event'] === 'sub_ack', 'the sub_ack', 10_000);
    // The bot's own idempotency key and release time: made anew on every run, never compared.
    const releaseAt = new Date(Date.now() + RELEASE_MS).toISOString();
    bot.send(
      JSON.stringify({
        event: 'add-stream-post',
        data: {
          streamId: 'macro-wire',
          content: 'later',
          contentType: 'rawtext',
          releaseAt,
          idempotencyKey: 'live-key',
        },
        requestId: 'mine',
      }),
    );
    const created = await bot.waitFor((m) => m['event'] === 'stream.post.created', 'the hidden post', 10_000);
    const ack = bot.received.find((r) => r.message?.['event'] === 'ack')!.message!;
    expect(ack['requestId']).toBe('mine');
    // Shifted as the recording's start was: 60.1 s after the shifted serverTime of its first frame.
    const shifted = Date.parse((bot.received[created]!.message!['data'] as { releaseAt: string }).releaseAt);
    const start = Date.parse((bot.received[0]!.message!['data'] as { serverTime: string }).serverTime);
    expect(shifted - start).toBe(100 + RELEASE_MS);
    expect(start).not.toBe(Date.parse(recordedTime(0)));
    // A minute of recorded time is still ahead: the release has not come.
    expect(bot.indexOf((m) => m['event'] === 'stream.post.released')).toBe(-1);
    await server.advanceClock(RELEASE_MS);
    await bot.waitFor((m) => m['event'] === 'stream.post.released', 'the release', 10_000);
    expect(bot.received.map((r) => r.message!['event'])).toEqual([
      'connected',
      'sub_ack',
      'ack',
      'stream.post.created',
      'stream.post.released',
    ]);
  });
});

describe('serve --replay: what else a recording holds', () => {
  const refused: RecordedConnection = {
    ...wsConnection(1, [], {
      query: [
        ['apiKey', '<key-1>'],
        ['streamIds', 'x'],
      ],
    }),
    refused: {
      status: 401,
      headers: { 'content-type': 'application/json', 'www-authenticate': 'ApiKey' },
      body: { json: { message: 'Invalid secret key' } },
    },
  };
  const closedByServer = wsConnection(2, [
    fromServer(0, { event: 'error', data: { code: 'unauthorized', message: 'Invalid secret key' } }),
    { t: 1, from: 'server', op: 'close', code: 4401, reason: 'unauthorized' },
  ]);
  const graphql: RecordedConnection = {
    id: 3,
    at: 30,
    transport: 'graphql',
    request: { path: '/graphql', query: [], headers: { 'sec-websocket-protocol': 'graphql-transport-ws' } },
    subprotocol: 'graphql-transport-ws',
    events: [
      fromClient(10, { type: 'connection_init', payload: { apiKey: '<key-1>' } }),
      fromServer(11, { type: 'connection_ack' }),
      fromClient(20, {
        type: 'subscribe',
        id: 'recorded-id',
        payload: { query: 'subscription { streamPostCreated { text createdAt streamId } }' },
      }),
      fromServer(900, {
        type: 'next',
        id: 'recorded-id',
        payload: { data: { streamPostCreated: { text: 'hi', createdAt: recordedTime(900), streamId: 'macro-wire' } } },
      }),
      fromClient(950, { type: 'ping' }),
      fromServer(951, { type: 'pong' }),
    ],
  };
  const tree: RecordedConnection = {
    id: 4,
    at: 40,
    transport: 'tree',
    request: {
      path: '/graphql',
      query: [
        ['format', 'tree'],
        ['apiKey', '<key-1>'],
      ],
      headers: {},
    },
    events: [
      { t: 5, from: 'client', op: 'text', text: 'login <key-1>' },
      fromServer(6, { title: 'a tree item', body: 'hello <key-1>' }),
      { t: 50, from: 'client', op: 'text', text: 'ping' },
      { t: 51, from: 'server', op: 'text', text: 'pong' },
    ],
  };
  const held = recording({ connections: [refused, closedByServer, graphql, tree] });

  it('answers a refused upgrade with the recorded status and body', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const ws = new WebSocket(`${server.url}/v1/ws?apiKey=${KEYS.bob}&streamIds=x`);
    ws.on('error', () => {});
    const response = await new Promise<IncomingMessage>((resolve) =>
      ws.once('unexpected-response', (_req, res) => resolve(res)),
    );
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('ApiKey');
    expect(JSON.parse(Buffer.concat(chunks).toString())).toEqual({ message: 'Invalid secret key' });
  });

  it('closes with the recorded code and reason', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const bot = await openReplayed(server, `/v1/ws?apiKey=wrong`);
    const closed = await bot.closed;
    expect(closed).toMatchObject({ code: 4401, reason: 'unauthorized' });
    expect(bot.received[0]!.message).toEqual({
      event: 'error',
      data: { code: 'unauthorized', message: 'Invalid secret key' },
    });
  });

  it('speaks graphql-ws with the recorded subprotocol, the live subscription id in its answers, pings answered', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const bot = await openReplayed(server, '/graphql', { protocols: ['graphql-transport-ws'] });
    expect(bot.ws.protocol).toBe('graphql-transport-ws');
    bot.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: KEYS.alice } }));
    await bot.waitFor((m) => m['type'] === 'connection_ack', 'the ack', 10_000);
    bot.send(
      JSON.stringify({
        type: 'subscribe',
        id: 'a9d3',
        payload: { query: 'subscription { streamPostCreated { text createdAt streamId } }' },
      }),
    );
    const next = await bot.waitFor((m) => m['type'] === 'next', 'the post', 10_000);
    expect(bot.received[next]!.message!['id']).toBe('a9d3');
    bot.send(JSON.stringify({ type: 'ping' }));
    await bot.waitFor((m) => m['type'] === 'pong', 'the pong', 10_000);
  });

  it('hands a graphql-ws connection over mid-way with replayFallback, its connection_init given to the simulated service first', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max', replayFallback: true });
    const bot = await openReplayed(server, '/graphql', { protocols: ['graphql-transport-ws'] });
    bot.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: KEYS.alice } }));
    await bot.waitFor((m) => m['type'] === 'connection_ack', 'the recorded ack', 10_000);
    bot.send(
      JSON.stringify({
        type: 'subscribe',
        id: 'sim-1',
        payload: { query: 'subscription { streamPostCreated(streamIds: ["macro-wire"], lastPosts: 1) { streamId } }' },
      }),
    );
    // Not in the recording: the simulated service answers, from the demo seed's history.
    const next = await bot.waitFor((m) => m['type'] === 'next', 'the simulated post', 10_000);
    expect(bot.received[next]!.message).toEqual({
      type: 'next',
      id: 'sim-1',
      payload: { data: { streamPostCreated: { streamId: 'macro-wire' } } },
    });
    // The simulated service's own acknowledgement is kept back: the bot has had the recorded one.
    expect(bot.received.filter((r) => r.message?.['type'] === 'connection_ack')).toHaveLength(1);
    expect(bot.isClosed).toBe(false);
  });

  it('takes the key a tree client logs in with for the placeholder, and echoes it where the upstream did', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const bot = await openReplayed(server, `/graphql?format=tree&apiKey=${KEYS.newsdesk}`);
    bot.send(`login ${KEYS.newsdesk}`);
    await bot.until(() => bot.received.length === 1, 'the tree item', 10_000);
    expect(bot.received[0]!.message).toEqual({ title: 'a tree item', body: `hello ${KEYS.newsdesk}` });
    bot.send('ping');
    await bot.until(() => bot.received.some((r) => r.raw === 'pong'), 'the pong', 10_000);
  });

  it('closes 4400 a connection the recording has none of', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const bot = await openReplayed(server, `/v1/ws/on-stream-post?apiKey=${KEYS.alice}`);
    const closed = await bot.closed;
    expect(closed.code).toBe(CLOSE_NO_RECORDED_REPLY);
    expect(closed.reason).toBe('no recorded connection for /v1/ws/on-stream-post?apiKey=[redacted]');
    const graphql = await openReplayed(server, '/graphql?format=json', { protocols: ['graphql-transport-ws'] });
    expect(await graphql.closed).toMatchObject({ code: CLOSE_NO_RECORDED_REPLY });
  });

  it('lists replayed connections with the others; close and refuse-connections faults act on them', async () => {
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const bot = await openReplayed(server, '/graphql', { protocols: ['graphql-transport-ws'] });
    const listed = await http(server, 'GET', '/_admin/connections');
    expect(bot.isClosed).toBe(false);
    const ids = (listed.body as { connections: { id: string }[] }).connections.map((connection) => connection.id);
    expect(ids).toEqual(['r1']);
    await server.faults.add({ type: 'close', code: 1012, reason: 'cut', scope: { connection: 'r1' } });
    expect(await bot.closed).toMatchObject({ code: 1012, reason: 'cut' });
    await server.faults.add({ type: 'refuse-connections', status: 503 });
    const refused = new WebSocket(`${server.url}/graphql`, ['graphql-transport-ws']);
    refused.on('error', () => {});
    const status = await new Promise<number | undefined>((resolve) =>
      refused.once('unexpected-response', (_req, res) => resolve(res.statusCode)),
    );
    expect(status).toBe(503);
  });
});

describe('serve --replay: a recording that cannot be replayed', () => {
  it('is refused at start naming the place, from a file or as an object', async () => {
    const broken = recording({ connections: [wsConnection(1, [fromServer(5, {}), fromServer(3, {})])] });
    const file = await recordingFile(broken);
    const fromFile = await startTestServer({ replay: file }).catch((error: unknown) => error);
    expect(fromFile).toBeInstanceOf(StreamPostsError);
    expect(fromFile).toMatchObject({ code: 'invalid-recording', path: `${file} at connections[0].events[1].t` });
    const notOurs = await startTestServer({ replay: { meta: { format: 'har' } } as never }).catch(
      (error: unknown) => error,
    );
    expect((notOurs as Error).message).toBe(
      'replay at meta.format: is "har", not "stream-posts-recording": not a file serve --record wrote',
    );
    const split = recording({
      requests: [
        {
          ...exchange(1, 'GET', '/v1/streams', [], { status: 200, json: {} }),
          response: { t: 1, status: 200, headers: { 'x-note': 'a\r\nset-cookie: b' } },
        },
      ],
    });
    const headerLine = await startTestServer({ replay: split }).catch((error: unknown) => error);
    expect((headerLine as Error).message).toBe(
      'replay at requests[0].response.headers.x-note: expected a header value without line breaks',
    );
    const badSpeed = await startTestServer({ replay: hiddenPost, replaySpeed: 0 }).catch((error: unknown) => error);
    expect(badSpeed).toMatchObject({ name: 'RangeError', option: 'replaySpeed' });
  });
});
