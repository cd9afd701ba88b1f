import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import {
  adminState,
  connectAs,
  http,
  KEYS,
  publish,
  startTestServer,
  type Message,
  type TestClient,
} from '../support/harness.js';

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

/** Sends `count` publishes at once. */
function sendBurst(client: TestClient, count: number, from = 0): void {
  for (let i = from; i < from + count; i += 1) client.send(publishFrame(i));
}

const isReply = (m: Message) => m.event === 'ack' || m.event === 'error';

/** Waits until `count` replies (acks or errors) have arrived, without moving the cursor. */
async function untilReplies(client: TestClient, count: number): Promise<void> {
  await client.next(() => client.messages.filter(isReply).length >= count, 10_000);
}

/**
 * Commands on one connection are answered in order, so once a command sent after a burst is
 * answered, every frame of the burst has been handled. A command past the rate may itself be
 * dropped without a reply: it is sent again until one gets through (a wait on arrivals, each
 * bounded, not a sleep).
 */
async function barrier(client: TestClient): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const reply = await client.request('on-stream-post', { streamIds: 'macro-wire' }, 250).catch(() => undefined);
    if (reply?.event === 'sub_ack') return;
  }
  throw new Error('no command got through after the burst');
}

/** The burst's replies (acks and errors carrying a b… requestId), in arrival order. */
function burstReplies(client: TestClient): Message[] {
  return client.messages.filter((m) => isReply(m) && typeof m.requestId === 'string' && m.requestId.startsWith('b'));
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
    sendBurst(client, 60);
    // At least the burst is acked and at least a burst of refusals is answered.
    await untilReplies(client, 2 * BURST);
    await barrier(client);
    const refill = Math.max(REFILL_SLACK, Math.ceil(((performance.now() - sentAt) / 1000) * BURST_RATE));
    const replies = burstReplies(client);
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
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('answers rate-limited commands with their requestId, at most a burst of them at once, and drops the rest unanswered', async () => {
    const server = await startTestServer({ rateLimit: BURST_RATE });
    const client = await connectAs(server, KEYS.macroWire);
    const sentAt = performance.now();
    sendBurst(client, 200);
    await untilReplies(client, 2 * BURST);
    await barrier(client);
    const refill = Math.max(REFILL_SLACK, Math.ceil(((performance.now() - sentAt) / 1000) * BURST_RATE));
    const replies = burstReplies(client);
    const limited = replies.filter((reply) => reply.event === 'error');
    expect(limited.map((reply) => reply.data.code)).toEqual(limited.map(() => 'rate-limited'));
    expect(limited.length).toBeGreaterThanOrEqual(BURST);
    // The replies to refusals are rate limited too: a flood is not answered frame for frame.
    expect(limited.length).toBeLessThanOrEqual(BURST + refill);
    expect(replies.length).toBeLessThan(200);
    expect(new Set(replies.map((reply) => reply.requestId)).size).toBe(replies.length);
  });

  it('limits nothing with rateLimit 0', async () => {
    const server = await startTestServer({ rateLimit: 0 });
    const { posts } = await adminState(server);
    const client = await connectAs(server, KEYS.macroWire);
    // More than the default burst of 400.
    sendBurst(client, 450);
    await untilReplies(client, 450);
    expect(client.messages.filter((reply) => isReply(reply) && reply.event !== 'ack')).toEqual([]);
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
      const ack = await publisher.request('add-stream-post', {
        streamId: 'macro-wire',
        content: `${i} ${padding}`,
        contentType: 'rawtext',
      });
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
