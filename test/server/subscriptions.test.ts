import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { Arrivals } from '../support/arrivals.js';
import { afterTest, connect, connectAs, KEYS, SEVERAL_INSTANCES, startTestServer } from '../support/harness.js';

// One subscription service stands behind /v1/ws, its tree feeds and /graphql: whatever the
// transport, a refusal is the same refusal, in the same words.

interface GraphqlMessage {
  type: string;
  id?: string;
  payload?: any;
}

/** A bare graphql-transport-ws connection: its messages, its close, and a way to wait on them. */
function graphqlSocket(server: StreamPostsServer, apiKey: string) {
  const ws = new WebSocket(`${server.url}/graphql`, 'graphql-transport-ws');
  afterTest(() => ws.terminate());
  const arrivals = new Arrivals();
  const messages: GraphqlMessage[] = [];
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()) as GraphqlMessage);
    arrivals.notify();
  });
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey } })));
  const until = (ready: () => boolean, what: string) =>
    arrivals.until(ready, 10_000, () => new Error(`${what} never came: ${JSON.stringify(messages)}`));
  return {
    closed,
    acked: () => until(() => messages.some((message) => message.type === 'connection_ack'), 'connection_ack'),
    subscribe(id: string, query: string): void {
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
    },
    /** The first error of operation `id`, whichever way graphql-ws sent it. */
    async errorOf(id: string): Promise<{ message: string; extensions?: { code?: string } }> {
      const failed = (message: GraphqlMessage) =>
        message.id === id &&
        ((message.type === 'next' && message.payload?.errors !== undefined) || message.type === 'error');
      await until(() => messages.some(failed), `an error for operation ${id}`);
      const message = messages.find(failed)!;
      return message.type === 'error' ? message.payload[0] : message.payload.errors[0];
    },
  };
}

describe('one subscription service, every transport', () => {
  it.each([
    // One held subscription on each transport, then one more than the cap allows.
    ['past the subscription cap', { maxSubscriptions: 1 }, ['macro-wire', 'crypto-legal'], 0, 'limit-exceeded'],
    ['with lastPosts out of range', {}, ['macro-wire'], 101, 'invalid-argument'],
  ] as const)(
    'refuses a subscribe %s in the same words on /v1/ws and /graphql',
    async (_name, options, streams, lastPosts, code) => {
      const server = await startTestServer(options);
      const held = streams.slice(0, -1);
      const asked = streams.at(-1)!;
      const client = await connectAs(server, KEYS.alice);
      for (const streamId of held) {
        expect((await client.request('on-stream-post', { streamIds: streamId })).event).toBe('sub_ack');
      }
      const overWs = await client.request('on-stream-post', { streamIds: asked, lastPosts });

      const graphql = graphqlSocket(server, KEYS.alice);
      await graphql.acked();
      for (const streamId of held) {
        graphql.subscribe(streamId, `subscription { streamPostCreated(streamIds: ["${streamId}"]) { id } }`);
      }
      graphql.subscribe(
        'asked',
        `subscription { streamPostCreated(streamIds: ["${asked}"], lastPosts: ${lastPosts}) { id } }`,
      );
      const overGraphql = await graphql.errorOf('asked');

      expect(overWs.data.code).toBe(code);
      expect(overGraphql).toMatchObject({ message: overWs.data.message, extensions: { code } });
    },
  );

  it('refuses a bad key in the same words: the error event on /v1/ws, the close reason where no event can say it', async () => {
    const server = await startTestServer();
    const envelope = await connect(server, { key: 'sp_not_a_key' });
    const refusal = await envelope.nextEvent('error');
    expect(refusal.data.code).toBe('unauthorized');
    expect((await envelope.closed).code).toBe(4401);

    const treeFeed = await connect(server, { key: 'sp_not_a_key', path: '/v1/ws/on-stream-post-tree' });
    const graphql = graphqlSocket(server, 'sp_not_a_key');
    for (const closed of [await treeFeed.closed, await graphql.closed]) {
      expect(closed).toEqual({ code: 4401, reason: refusal.data.message });
    }
    expect(treeFeed.messages).toEqual([]);
  });

  it("refuses a connection past the key's cap in the same words on every transport", async ({ skip }) => {
    skip(SEVERAL_INSTANCES, "one instance's cap: with several instances each counts its own connections");
    const server = await startTestServer({ maxConnectionsPerKey: 1 });
    await connectAs(server, KEYS.alice);
    const envelope = await connect(server, { key: KEYS.alice });
    const refusal = await envelope.nextEvent('error');
    expect(refusal.data.code).toBe('limit-exceeded');
    expect((await envelope.closed).code).toBe(1008);

    const treeFeed = await connect(server, { key: KEYS.alice, path: '/v1/ws/on-stream-post-tree' });
    const graphql = graphqlSocket(server, KEYS.alice);
    for (const closed of [await treeFeed.closed, await graphql.closed]) {
      expect(closed).toEqual({ code: 1008, reason: refusal.data.message });
    }
    expect(treeFeed.messages).toEqual([]);
  });
});
