import { describe, expect, it } from 'vitest';
import { CLOSE_NO_RECORDED_REPLY } from '../../src/protocol/close-codes.js';
import { KEYS, startTestServer } from '../support/harness.js';
import { RecordingLogger } from '../support/logger.js';
import {
  exchange,
  fromClient,
  fromServer,
  openReplayed,
  recordedTime,
  recording,
  wsConnection,
} from '../support/recordings.js';

const connected = fromServer(0, {
  event: 'connected',
  data: { message: 'connected', userId: 'alice', streams: ['macro-wire'], serverTime: recordedTime(0) },
});
const subscribe = (requestId: string) =>
  fromClient(100, { event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 0 }, requestId });
const subAck = (requestId: string) =>
  fromServer(105, { event: 'sub_ack', data: { command: 'on-stream-post', streamIds: ['macro-wire'] }, requestId });
const post = (t: number, id: string) =>
  fromServer(t, {
    event: 'stream.post.created',
    data: { id, streamId: 'macro-wire', text: `post ${id}`, createdAt: recordedTime(t) },
  });

/** A session of one subscriber: greeted, subscribed, two posts. */
const subscriber = recording({
  connections: [
    wsConnection(1, [connected, subscribe('rec-1'), subAck('rec-1'), post(1_100, 'p1'), post(2_100, 'p2')]),
  ],
});

const events = (client: { received: { message?: Record<string, unknown> | undefined }[] }) =>
  client.received.map((received) => received.message?.['event']);

describe('serve --replay: WebSocket', () => {
  it('answers a bot with another key than the recording had, its requestId in the replies', async () => {
    const server = await startTestServer({ replay: subscriber, replaySpeed: 'max' });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.bob}`);
    await bot.waitFor((m) => m['event'] === 'connected', 'connected', 10_000);
    bot.send(
      JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 0 }, requestId: 'live-7' }),
    );
    await bot.until(() => bot.received.length === 4, 'the sub_ack and both posts', 10_000);
    expect(events(bot)).toEqual(['connected', 'sub_ack', 'stream.post.created', 'stream.post.created']);
    expect(bot.received[1]!.message!['requestId']).toBe('live-7');
    expect(bot.received.map((r) => (r.message?.['data'] as { id?: string }).id)).toEqual([
      undefined,
      undefined,
      'p1',
      'p2',
    ]);
    expect(server.replayReport()).toEqual({
      unusedConnections: [],
      unusedRequests: [],
      unreachedFrames: [],
      unmatched: 0,
    });
  });

  it('closes 4400 on a frame the recording has no reply for, and logs the closest recorded frame', async () => {
    const logger = new RecordingLogger();
    const server = await startTestServer({ replay: subscriber, replaySpeed: 'max', logger });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.alice}`);
    bot.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'whale-alerts', lastPosts: 0 } }));
    const closed = await bot.closed;
    expect(closed.code).toBe(CLOSE_NO_RECORDED_REPLY);
    expect(closed.reason).toMatch(/^no recorded reply for \{"event":"on-stream-post"/);
    const line = logger.lines.find((entry) => entry.message === 'replay: no recorded reply')!;
    expect(line.fields['closest']).toBe(
      '{"event":"on-stream-post","data":{"streamIds":"macro-wire","lastPosts":0},"requestId":"rec-1"}',
    );
    expect(line.fields['differs']).toBe('data.streamIds');
    expect(server.replayReport()!.unmatched).toBe(1);
  });

  it('hands the connection to the simulated service with replayFallback', async () => {
    const logger = new RecordingLogger();
    const server = await startTestServer({ replay: subscriber, replaySpeed: 'max', replayFallback: true, logger });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.alice}`);
    await bot.waitFor((m) => m['event'] === 'connected', 'the recorded connected', 10_000);
    bot.send(
      JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'whale-alerts', lastPosts: 1 }, requestId: 'sim' }),
    );
    // The simulated service's own answer: the demo seed's whale-alerts, which the recording never had.
    const ack = await bot.waitFor((m) => m['event'] === 'sub_ack' && m['requestId'] === 'sim', 'the sub_ack', 10_000);
    expect((bot.received[ack]!.message!['data'] as { streamIds: string[] }).streamIds).toEqual(['whale-alerts']);
    expect(bot.isClosed).toBe(false);
    expect(
      logger.lines.filter((entry) => entry.message.startsWith('replay: what the recording does not answer')),
    ).toHaveLength(1);
  });

  it('shifts recorded date-times so that the recording starts when the replay does', async () => {
    const before = Date.now();
    const server = await startTestServer({ replay: subscriber, replaySpeed: 'max' });
    const after = Date.now();
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.alice}`);
    bot.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 0 } }));
    await bot.until(() => bot.received.length === 4, 'both posts', 10_000);
    const serverTime = Date.parse((bot.received[0]!.message!['data'] as { serverTime: string }).serverTime);
    const createdAt = Date.parse((bot.received[3]!.message!['data'] as { createdAt: string }).createdAt);
    expect(serverTime).toBeGreaterThanOrEqual(before);
    expect(serverTime).toBeLessThanOrEqual(after);
    expect(createdAt - serverTime).toBe(2_100);
  });

  it('scales the recorded offsets with a speed: ten minutes of recording at 100,000 times', async () => {
    const late = recording({
      connections: [wsConnection(1, [connected, subscribe('rec-1'), subAck('rec-1'), post(600_000, 'late')])],
    });
    const server = await startTestServer({ replay: late, replaySpeed: 100_000 });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.alice}`);
    bot.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 0 } }));
    await bot.waitFor((m) => m['event'] === 'stream.post.created', 'the post ten recorded minutes later', 10_000);
  });

  it('leaves the fields named with replayIgnore out of matching', async () => {
    const traced = recording({
      connections: [
        wsConnection(1, [
          connected,
          fromClient(100, { event: 'on-stream-post', data: { streamIds: 'macro-wire', trace: { id: 'rec' } } }),
          subAck('x'),
        ]),
      ],
    });
    const live = JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire', trace: { id: 'live' } } });
    const ignoring = await startTestServer({ replay: traced, replaySpeed: 'max', replayIgnore: ['data.trace.id'] });
    const bot = await openReplayed(ignoring, `/v1/ws?apiKey=${KEYS.alice}`);
    bot.send(live);
    await bot.waitFor((m) => m['event'] === 'sub_ack', 'the sub_ack', 10_000);
    const strict = await startTestServer({ replay: traced, replaySpeed: 'max' });
    const other = await openReplayed(strict, `/v1/ws?apiKey=${KEYS.alice}`);
    other.send(live);
    expect((await other.closed).code).toBe(CLOSE_NO_RECORDED_REPLY);
  });

  it('keeps the recorded date-times with replayTimes as-recorded', async () => {
    const server = await startTestServer({ replay: subscriber, replaySpeed: 'max', replayTimes: 'as-recorded' });
    const bot = await openReplayed(server, `/v1/ws?apiKey=${KEYS.alice}`);
    await bot.waitFor((m) => m['event'] === 'connected', 'connected', 10_000);
    expect((bot.received[0]!.message!['data'] as { serverTime: string }).serverTime).toBe(recordedTime(0));
  });
});

describe('serve --replay: REST', () => {
  const page = (token: string | null, ids: string[]) => ({
    status: 200,
    json: { items: ids.map((id) => ({ id })), nextToken: token },
  });
  const streams = recording({
    requests: [
      exchange(1, 'GET', '/v1/streams', [['limit', '1']], page('t1', ['a'])),
      exchange(2, 'GET', '/v1/streams', [['limit', '1']], page('t2', ['b'])),
      exchange(
        3,
        'GET',
        '/v1/streams',
        [
          ['limit', '1'],
          ['nextToken', 't1'],
        ],
        page(null, ['c']),
      ),
    ],
  });

  it('answers the same request again with the recorded answers in their order, then the last again', async () => {
    const server = await startTestServer({ replay: streams, replaySpeed: 'max' });
    const get = async (query: string) => {
      const response = await fetch(`${server.httpUrl}/v1/streams${query}`, { headers: { 'x-api-key': KEYS.alice } });
      return { status: response.status, body: (await response.json()) as { nextToken: string | null } };
    };
    expect((await get('?limit=1')).body.nextToken).toBe('t1');
    expect((await get('?limit=1')).body.nextToken).toBe('t2');
    expect((await get('?nextToken=t1&limit=1')).body.nextToken).toBe(null);
    expect((await get('?limit=1')).body.nextToken).toBe('t2');
    expect(server.replayReport()!.unusedRequests).toEqual([]);
  });

  it('answers an HTTP request to /graphql the recording holds, as the hosted service takes one', async () => {
    const mutation = { query: 'mutation { createPost(text: "hi") { id } }' };
    const held = recording({
      requests: [
        exchange(1, 'POST', '/graphql', [], { status: 200, json: { data: { createPost: { id: 'x' } } } }, mutation),
      ],
    });
    const server = await startTestServer({ replay: held, replaySpeed: 'max' });
    const response = await fetch(`${server.httpUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(mutation),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { createPost: { id: 'x' } } });
  });

  it('answers 404 naming the closest recorded request and what differs', async () => {
    const server = await startTestServer({ replay: streams, replaySpeed: 'max' });
    const response = await fetch(`${server.httpUrl}/v1/streams?limit=2`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { code: 'not-found', message: 'no recorded reply for GET /v1/streams?limit=2' },
      closest: { id: 1, request: 'GET /v1/streams?limit=1', differs: ['query.limit'] },
    });
    expect((await fetch(`${server.httpUrl}/v1/ws`)).status).toBe(426);
    expect((await fetch(`${server.httpUrl}/graphql`, { method: 'POST', body: '{}' })).status).toBe(426);
    const unused = server.replayReport()!.unusedRequests.map((request) => request.id);
    expect(unused).toEqual([1, 2, 3]);
  });
});
