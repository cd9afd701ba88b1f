import { describe, expect, it } from 'vitest';
import { publishRest } from '../../src/index.js';
import { adminState, connectAs, http, KEYS, startTestServer } from '../support/harness.js';
import { libraryClient, rejection } from '../support/api.js';

describe('fail-publishes', () => {
  it('fails the next N publishes over WebSocket and REST with its code, stores nothing, then lets them through', async () => {
    const server = await startTestServer();
    const postsBefore = (await adminState(server)).posts;
    const fault = await server.faults.add({ type: 'fail-publishes', count: 2, code: 'unavailable', message: 'down' });
    expect(fault).toMatchObject({ count: 2, code: 'unavailable', message: 'down' });

    const { client } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const overWs = await rejection(client.publish({ streamId: 'macro-wire', content: 'fails' }));
    expect([overWs.code, overWs.message]).toEqual(['unavailable', 'down']);
    expect(server.faults.list()[0]).toMatchObject({ id: fault.id, count: 1 });

    const overRest = await http(server, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'fails too', contentType: 'rawtext' },
    });
    expect([overRest.status, overRest.body.error]).toEqual([503, { code: 'unavailable', message: 'down' }]);
    expect((await adminState(server)).posts).toBe(postsBefore);
    expect(server.faults.list()).toEqual([]);

    const { post } = await client.publish({ streamId: 'macro-wire', content: 'goes through' });
    expect(post.text).toBe('goes through');
    expect((await adminState(server)).posts).toBe(postsBefore + 1);
  });

  it('applies to the scope it names only, and a refused publish (a reader key) is refused as ever', async () => {
    const server = await startTestServer();
    await server.faults.add({ type: 'fail-publishes', code: 'internal', scope: { stream: 'whale-alerts' } });
    const macro = await connectAs(server, KEYS.macroWire);
    const ok = await macro.request('add-stream-post', {
      streamId: 'macro-wire',
      content: 'fine',
      contentType: 'rawtext',
    });
    expect(ok.event).toBe('ack');
    const whale = await connectAs(server, KEYS.whaleAlerts);
    const failed = await whale.request('add-stream-post', {
      streamId: 'whale-alerts',
      content: 'fails',
      contentType: 'rawtext',
      customTarget: 'BTC',
    });
    expect(failed).toMatchObject({ event: 'error', data: { code: 'internal', command: 'add-stream-post' } });
    expect(server.faults.list()).toHaveLength(1);
  });

  it('with rate-limited: the client retries by itself and publishes once the fault is used up', async () => {
    const server = await startTestServer();
    await server.faults.add({ type: 'fail-publishes', count: 2, code: 'rate-limited' });
    const { client } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const { post, duplicate } = await client.publish({ streamId: 'macro-wire', content: 'retried' });
    expect([post.text, duplicate]).toEqual(['retried', false]);
    expect(server.faults.list()).toEqual([]);
  });
});

describe('drop-acks', () => {
  it('over WebSocket: the post is stored, the ack lost; the retry with the same idempotency key gives the one post, duplicate', async () => {
    const server = await startTestServer();
    const postsBefore = (await adminState(server)).posts;
    await server.faults.add({ type: 'drop-acks', count: 1 });
    const { client } = await libraryClient(server, server.keys.streams['macro-wire']!);
    const idempotencyKey = 'drop-acks-ws-1';
    const first = await rejection(
      client.publish({ streamId: 'macro-wire', content: 'once', idempotencyKey, timeoutMs: 200 }),
    );
    expect(first.code).toBe('timeout');
    expect(first.message).toContain(idempotencyKey);
    const again = await client.publish({ streamId: 'macro-wire', content: 'once', idempotencyKey });
    expect(again.duplicate).toBe(true);
    expect((await adminState(server)).posts).toBe(postsBefore + 1);
    const listed = await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=100', { key: KEYS.alice });
    expect(listed.body.posts.filter((post: { text: string }) => post.text === 'once')).toHaveLength(1);
  });

  it('takes only publishes that store a post: a refused one still gets its error, and the count is kept', async () => {
    const server = await startTestServer();
    const fault = await server.faults.add({ type: 'drop-acks', count: 1 });
    const wrongKey = await connectAs(server, KEYS.whaleAlerts);
    const refused = await wrongKey.request('add-stream-post', {
      streamId: 'macro-wire',
      content: 'not mine',
      contentType: 'rawtext',
    });
    expect(refused).toMatchObject({ event: 'error', data: { code: 'forbidden' } });
    expect(server.faults.list()).toEqual([expect.objectContaining({ id: fault.id, count: 1 })]);
  });

  it('over REST: the socket is dropped after the post is stored; publishRest retries with its key and gets the one post', async () => {
    const server = await startTestServer();
    const postsBefore = (await adminState(server)).posts;
    await server.faults.add({ type: 'drop-acks', count: 1, scope: { key: KEYS.macroWire } });
    const options = {
      url: server.httpUrl,
      apiKey: server.keys.streams['macro-wire']!,
      streamId: 'macro-wire',
      content: 'rest once',
      idempotencyKey: 'drop-acks-rest-1',
    };
    const first = await publishRest(options);
    expect(first.post.text).toBe('rest once');
    const again = await publishRest(options);
    expect([again.post.id, again.duplicate]).toEqual([first.post.id, true]);
    expect((await adminState(server)).posts).toBe(postsBefore + 1);
  });
});
