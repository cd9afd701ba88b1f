import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/server/server.js';
import { adminState, connectAs, http, KEYS, publish, startTestServer, type Message, type TestClient } from '../support/harness.js';

const BURST_RATE = 10; // burst = 2 × rate = 20
const BURST = 2 * BURST_RATE;
const REFILL_SLACK = 2;

function publishFrame(index: number): Record<string, unknown> {
  return {
    event: 'add-stream-post',
    data: { streamId: 'macro-wire', content: `burst ${index}`, contentType: 'rawtext' },
    requestId: `b${index}`,
  };
}

/** Sends `count` publishes at once, then waits for one reply (ack or error) per command. */
async function burst(client: TestClient, count: number): Promise<Message[]> {
  for (let i = 0; i < count; i += 1) client.send(publishFrame(i));
  const replies: Message[] = [];
  while (replies.length < count) replies.push(await client.next((m) => m.event === 'ack' || m.event === 'error'));
  return replies;
}

async function watchMacroWire(server: StreamPostsServer, key: string = KEYS.newsdesk): Promise<TestClient> {
  const client = await connectAs(server, key);
  expect((await client.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
  return client;
}

/** Ids of the posts the watcher got before a marker published now (the barrier). */
async function idsBeforeMarker(server: StreamPostsServer, watcher: TestClient): Promise<string[]> {
  const marker = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
  const ids: string[] = [];
  for (;;) {
    const { data } = await watcher.nextEvent('stream.post.created');
    if (data.id === marker.id) return ids;
    ids.push(data.id);
  }
}

describe('rate limit', () => {
  it('rejects the commands beyond the burst, publishes the rest, keeps the connection', async () => {
    const server = await startTestServer({ rateLimit: BURST_RATE });
    const watcher = await watchMacroWire(server);
    const { posts } = await adminState(server);
    const client = await connectAs(server, KEYS.macroWire);

    const sentAt = performance.now();
    const replies = await burst(client, 60);
    // The bucket cannot have refilled more than the rate allows over the whole exchange (slow machines).
    const refill = Math.max(REFILL_SLACK, Math.ceil(((performance.now() - sentAt) / 1000) * BURST_RATE));
    const acks = replies.filter((reply) => reply.event === 'ack');
    const errors = replies.filter((reply) => reply.event === 'error');
    expect(errors.map((error) => error.data.code)).toEqual(errors.map(() => 'rate-limited'));
    // A full bucket lets the first BURST through; refill during the send may let a few more.
    expect(acks.length).toBeGreaterThanOrEqual(BURST);
    expect(acks.length).toBeLessThanOrEqual(BURST + refill);
    const acked = acks.map((ack) => ack.requestId);
    expect(acked.slice(0, BURST)).toEqual(Array.from({ length: BURST }, (_, i) => `b${i}`));

    expect((await adminState(server)).posts).toBe(posts + acks.length);
    expect(await idsBeforeMarker(server, watcher)).toEqual(acks.map((ack) => ack.data.post.id));
    expect(acks.map((ack) => ack.data.post.text)).toEqual(acked.map((id) => `burst ${id!.slice(1)}`));

    // Still open and answering (the bucket may not have refilled yet, so either answer will do).
    client.send(publishFrame(60));
    expect(['ack', 'error']).toContain((await client.next((m) => m.event === 'ack' || m.event === 'error')).event);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('answers each rate-limited command with its requestId', async () => {
    const server = await startTestServer({ rateLimit: BURST_RATE });
    const client = await connectAs(server, KEYS.macroWire);
    const replies = await burst(client, 60);
    const limited = replies.filter((reply) => reply.event === 'error');
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.map((reply) => typeof reply.requestId)).toEqual(limited.map(() => 'string'));
    expect(new Set(replies.map((reply) => reply.requestId)).size).toBe(60);
  });

  it('limits nothing with rateLimit 0', async () => {
    const server = await startTestServer({ rateLimit: 0 });
    const { posts } = await adminState(server);
    const client = await connectAs(server, KEYS.macroWire);
    // More than the default burst of 400.
    const replies = await burst(client, 450);
    expect(replies.filter((reply) => reply.event !== 'ack')).toEqual([]);
    expect((await adminState(server)).posts).toBe(posts + 450);
  });
});

describe('backpressure', () => {
  it('closes a subscriber that stops reading with 1013 and delivers everything to the others', async () => {
    const server = await startTestServer({ maxBufferedBytes: 256 * 1024 });
    const slow = await watchMacroWire(server, KEYS.alice);
    const normal = await watchMacroWire(server, KEYS.bob);
    const { subscriptions } = await adminState(server);
    const slowSocket = (slow.ws as unknown as { _socket: Socket })._socket;
    slowSocket.pause();

    const publisher = await connectAs(server, KEYS.macroWire);
    // 200 × 60 KB: well past what the kernel's socket buffers absorb before the server's own queue grows.
    const padding = 'x'.repeat(60_000);
    const ids: string[] = [];
    for (let i = 0; i < 200; i += 1) {
      const ack = await publisher.request('add-stream-post', { streamId: 'macro-wire', content: `${i} ${padding}`, contentType: 'rawtext' });
      expect(ack.event).toBe('ack');
      ids.push(ack.data.post.id);
    }

    // Fan-out is synchronous with the publish, so the slow subscription is gone by the last ack.
    expect((await adminState(server)).subscriptions).toBe(subscriptions - 1);
    const received: string[] = [];
    while (received.length < ids.length) received.push((await normal.nextEvent('stream.post.created')).data.id);
    expect(received).toEqual(ids);

    slowSocket.resume();
    expect((await slow.closed).code).toBe(1013);
    const slowIds = slow.messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.id);
    expect(slowIds.length).toBeLessThan(ids.length);
    expect(slowIds).toEqual(ids.slice(0, slowIds.length));

    expect((await http(server, 'GET', '/healthz')).status).toBe(200);
    const fresh = await watchMacroWire(server, KEYS.alice);
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'after' });
    expect((await fresh.nextEvent('stream.post.created')).data.id).toBe(post.id);
    expect((await normal.nextEvent('stream.post.created')).data.id).toBe(post.id);
  });
});
