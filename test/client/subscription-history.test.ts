import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import { Subscription, type Delivery } from '../../src/client/subscription.js';
import { Arrivals } from '../support/arrivals.js';
import type { Post } from '../../src/protocol/types.js';
import { samplePost } from '../support/fixtures.js';
import { CONNECTED, scriptedService } from '../support/hostile.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

type Frame = { event: string; requestId?: string; data: { lastPosts: number } };

const postFrame = (id: string, change: Partial<Post> = {}) =>
  JSON.stringify({ event: 'stream.post.created', data: samplePost({ id, text: `post ${id}`, ...change }) });

/** A post as the hosted service sends it: no streamName, created now (after the subscribe arrived). */
const hostedLive = (id: string, streamId = 's') =>
  JSON.stringify({
    event: 'stream.post.created',
    data: { id, streamId, text: `post ${id}`, createdAt: new Date().toISOString() },
  });

function ack(frame: Frame, history: number | undefined): string {
  const data = { command: frame.event, streamIds: ['s'], lastPosts: frame.data.lastPosts };
  return JSON.stringify({
    event: 'sub_ack',
    requestId: frame.requestId,
    data: history === undefined ? data : { ...data, history },
  });
}

/**
 * A service with three posts of history (created in 2026, long before the subscribe): it
 * answers a subscribe with them, then publishes one live post, created as it is sent.
 * `sendsHistory`: its acknowledgement says how many history posts follow.
 */
async function serviceWithHistory(sendsHistory: boolean) {
  const frames: Frame[] = [];
  const arrivals = new Arrivals();
  const service = await scriptedService((ws: WebSocket) => {
    ws.send(CONNECTED);
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      frames.push(frame);
      arrivals.notify();
      ws.send(ack(frame, sendsHistory ? 3 : undefined));
      for (const id of ['old1', 'old2', 'old3']) ws.send(postFrame(id));
      ws.send(hostedLive('live'));
    });
  });
  return { url: service.url, frames, arrivals };
}

function subscribe(url: string, arrivals: Arrivals, lastPosts: number, reconnect = false): Delivery[] {
  const deliveries: Delivery[] = [];
  const subscription = new Subscription(
    { endpoint: resolveEndpoint(url), apiKey: 'k', reconnect, backoff: { initialMs: 5, maxMs: 80 }, random: () => 1 },
    { command: 'on-stream-post', streamIds: undefined, lastPosts },
    {
      onDelivery: (delivery) => {
        deliveries.push(delivery);
        arrivals.notify();
      },
    },
  );
  closers.push(() => subscription.close());
  subscription.start().catch(() => {});
  return deliveries;
}

const shown = (deliveries: Delivery[]) =>
  deliveries.map((delivery) => [delivery.format === 'post' ? delivery.post.id : delivery.id, delivery.history]);

describe('where the first history ends', () => {
  it('sub_ack.history says it: one subscribe is sent, the last lastPosts are history, the next post is live', async () => {
    const { url, frames, arrivals } = await serviceWithHistory(true);
    const deliveries = subscribe(url, arrivals, 2);
    await arrivals.until(
      () => deliveries.length >= 3,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['old2', true],
      ['old3', true],
      ['live', false],
    ]);
    expect(frames.map((frame) => [frame.requestId, frame.data.lastPosts])).toEqual([['subscribe', 100]]);
  });

  it('no history field: one subscribe; the posts created before it are history, the first newer one is live', async () => {
    const { url, frames, arrivals } = await serviceWithHistory(false);
    const deliveries = subscribe(url, arrivals, 2);
    await arrivals.until(
      () => deliveries.length >= 3,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['old2', true],
      ['old3', true],
      ['live', false],
    ]);
    expect(frames.map((frame) => [frame.requestId, frame.data.lastPosts])).toEqual([['subscribe', 100]]);
  });

  it('no history field: the first newer post ends the history, and older ones after it are live too', async () => {
    const arrivals = new Arrivals();
    const service = await scriptedService((ws: WebSocket) => {
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        ws.send(ack(frame, undefined));
        ws.send(postFrame('a1', { streamId: 'a' }));
        ws.send(postFrame('b1', { streamId: 'b' }));
        ws.send(postFrame('b2', { streamId: 'b' }));
        ws.send(hostedLive('new', 'a'));
        // Created long ago (a slow clock, a late import): still live, coming after the history ended.
        ws.send(postFrame('late', { streamId: 'b' }));
      });
    });
    const deliveries = subscribe(service.url, arrivals, 1);
    await arrivals.until(
      () => deliveries.length >= 4,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['a1', true],
      ['b2', true],
      ['new', false],
      ['late', false],
    ]);
  });

  it('no history field and lastPosts 0: the history is remembered, not shown; the live post is', async () => {
    const { url, arrivals } = await serviceWithHistory(false);
    const deliveries = subscribe(url, arrivals, 0);
    await arrivals.until(
      () => deliveries.length >= 1,
      10_000,
      () => new Error('no delivery'),
    );
    expect(shown(deliveries)).toEqual([['live', false]]);
  });

  it('no history field and no live post: the history is shown once it pauses', async () => {
    const arrivals = new Arrivals();
    const service = await scriptedService((ws: WebSocket) => {
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        ws.send(ack(frame, undefined));
        for (const id of ['old1', 'old2']) ws.send(postFrame(id));
      });
    });
    const deliveries = subscribe(service.url, arrivals, 5);
    await arrivals.until(
      () => deliveries.length >= 2,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['old1', true],
      ['old2', true],
    ]);
  });

  it('a history of 0 is complete at once: the next post is live', async () => {
    const frames: Frame[] = [];
    const arrivals = new Arrivals();
    const service = await scriptedService((ws: WebSocket) => {
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        frames.push(frame);
        ws.send(ack(frame, 0));
        ws.send(postFrame('live'));
      });
    });
    const deliveries = subscribe(service.url, arrivals, 5);
    await arrivals.until(
      () => deliveries.length >= 1,
      10_000,
      () => new Error('no delivery'),
    );
    expect(shown(deliveries)).toEqual([['live', false]]);
    expect(frames).toHaveLength(1);
  });
});

describe('the replay after a reconnect', () => {
  it('from a restarted service: the history it shows again is known by id, only the post published meanwhile is new', async () => {
    const arrivals = new Arrivals();
    let connections = 0;
    const service = await scriptedService((ws: WebSocket) => {
      connections += 1;
      const restarted = connections > 1;
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        // The restarted service has lost `live` (kept in memory) and has one post published while the client was away.
        const history = restarted ? ['seed1', 'seed2', 'meanwhile'] : ['seed1', 'seed2'];
        ws.send(ack(frame, history.length));
        for (const id of history) ws.send(postFrame(id));
        if (!restarted) {
          ws.send(postFrame('live'));
          ws.close(1012, 'restarting');
        }
      });
    });
    const deliveries = subscribe(service.url, arrivals, 1, true);
    await arrivals.until(
      () => deliveries.length >= 3,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['seed2', true],
      ['live', false],
      ['meanwhile', false],
    ]);
    expect(connections).toBe(2);
  });

  it('an unseen post created before the newest one seen is not new, unless it was released since (a hosted-dialect release in the outage)', async () => {
    const arrivals = new Arrivals();
    let connections = 0;
    const newest = '2026-11-21T12:00:00.000Z';
    const hourBefore = '2026-11-21T11:00:00.000Z';
    const service = await scriptedService((ws: WebSocket) => {
      connections += 1;
      const again = connections > 1;
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        if (!again) {
          ws.send(ack(frame, 0));
          ws.send(postFrame('live', { createdAt: newest }));
          ws.close(1012, 'restarting');
          return;
        }
        // A restarted service's older post the client never saw; a post hidden an hour ago
        // (never pushed to it while hidden) and released during the outage; one from the outage.
        const replay = [
          postFrame('older', { createdAt: hourBefore }),
          postFrame('released', { createdAt: hourBefore, releaseAt: '2026-11-21T12:00:30.000Z' }),
          postFrame('meanwhile', { createdAt: '2026-11-21T12:00:20.000Z' }),
        ];
        ws.send(ack(frame, replay.length));
        for (const frameText of replay) ws.send(frameText);
      });
    });
    const deliveries = subscribe(service.url, arrivals, 0, true);
    await arrivals.until(
      () => deliveries.length >= 3,
      10_000,
      () => new Error(`got ${JSON.stringify(shown(deliveries))}`),
    );
    expect(shown(deliveries)).toEqual([
      ['live', false],
      ['released', false],
      ['meanwhile', false],
    ]);
  });
});
