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
  subscribeAs,
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

/** The burst's replies (acks and errors carrying a b… requestId), in arrival order. */
function burstReplies(client: TestClient): Message[] {
  return client.messages.filter((m) => isReply(m) && typeof m.requestId === 'string' && m.requestId.startsWith('b'));
}

async function watchMacroWire(server: StreamPostsServer, key: string = KEYS.newsdesk): Promise<TestClient> {
  return subscribeAs(server, key, { streamIds: 'macro-wire' });
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
    // Twice the burst: a burst gets through, the rest is refused within the budget of
    // refusals, so every command is answered (B4).
    sendBurst(client, 2 * BURST);
    await untilReplies(client, 2 * BURST);
    const refill = Math.max(REFILL_SLACK, Math.ceil(((performance.now() - sentAt) / 1000) * BURST_RATE));
    const replies = burstReplies(client);
    expect(replies.map((reply) => reply.requestId)).toEqual(Array.from({ length: 2 * BURST }, (_, i) => `b${i}`));
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

  it.each([
    ['a low rate', BURST_RATE, 200],
    ['the default rate (200/s, burst 400)', 200, 1000],
  ])(
    'with %s, a flood gets an answer for each command it sends until the close 1008 "rate limit exceeded", never silence',
    async (_name, rateLimit, count) => {
      const server = await startTestServer({ rateLimit });
      const { posts } = await adminState(server);
      const client = await connectAs(server, KEYS.macroWire);
      sendBurst(client, count);
      const close = await client.closed;
      expect(close).toEqual({ code: 1008, reason: 'rate limit exceeded' });
      const replies = burstReplies(client);
      // Answered in order, each once, then nothing: a client waiting on a requestId past the
      // last reply learns from the close that it will get none.
      expect(replies.map((reply) => reply.requestId)).toEqual(replies.map((_, i) => `b${i}`));
      expect(replies.length).toBeLessThan(count);
      const limited = replies.filter((reply) => reply.event === 'error');
      expect(limited.length).toBeGreaterThan(0);
      expect(limited.map((reply) => reply.data.code)).toEqual(limited.map(() => 'rate-limited'));
      // Every acknowledged post was stored.
      const acks = replies.filter((reply) => reply.event === 'ack');
      expect((await adminState(server)).posts).toBe(posts + acks.length);
    },
  );

  it('gives no burst back at a keep-alive round: a connection lets its buckets go only once they are full again', async () => {
    // One instance (a port of its own), so that the round reaches the connection. At 1 a
    // second (burst 2), a token comes back only after a second.
    const rate = 1;
    const server = await startTestServer({ port: 0, rateLimit: rate });
    const client = await connectAs(server, KEYS.macroWire);
    const sentAt = performance.now();
    sendBurst(client, 2);
    await untilReplies(client, 2);
    // Nothing waits on the connection now, but its bucket is empty: it is kept through the round.
    expect((await http(server, 'POST', '/_admin/keep-alive', { body: {} })).status).toBe(200);
    sendBurst(client, 2, 2);
    await untilReplies(client, 4);
    const refill = Math.floor(((performance.now() - sentAt) / 1000) * rate);
    const replies = burstReplies(client);
    expect(replies.map((reply) => reply.requestId)).toEqual(['b0', 'b1', 'b2', 'b3']);
    expect(replies.slice(0, 2).map((reply) => reply.event)).toEqual(['ack', 'ack']);
    // A bucket made afresh would have let both through; only what the rate gave back since may pass.
    const laterAcks = replies.slice(2).filter((reply) => reply.event === 'ack');
    expect(laterAcks.length).toBeLessThanOrEqual(refill);
    for (const reply of replies.slice(2 + laterAcks.length)) expect(reply.data.code).toBe('rate-limited');
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
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
    let kicked = false;
    for (let i = 0; i < 200; i += 1) {
      const ack = await publisher.request('add-stream-post', {
        streamId: 'macro-wire',
        content: `${i} ${padding}`,
        contentType: 'rawtext',
      });
      expect(ack.event).toBe('ack');
      ids.push(ack.data.post.id);
      // The slow reader reads again as soon as it is closed, well within the server's grace
      // for reading the close frame (past it the socket is dropped: 1006, not 1013).
      if (!kicked && (await adminState(server)).subscriptions === subscriptions - 1) {
        kicked = true;
        slowSocket.resume();
      }
    }

    // Fan-out is synchronous with the publish, so the slow subscription is gone by the last ack.
    expect(kicked).toBe(true);
    expect((await adminState(server)).subscriptions).toBe(subscriptions - 1);
    const received: string[] = [];
    while (received.length < ids.length) received.push((await normal.nextEvent('stream.post.created')).data.id);
    expect(received).toEqual(ids);

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
