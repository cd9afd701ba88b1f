import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { Connection, type ConnectionState } from '../../src/client/connection.js';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import type { ClientError } from '../../src/client/errors.js';
import { Publisher } from '../../src/client/publisher.js';
import { publishRest } from '../../src/client/rest.js';
import { Subscription } from '../../src/client/subscription.js';
import { Arrivals } from '../support/arrivals.js';
import { CONNECTED, scriptedService, silentHttpService, silentTcpService, subAck } from '../support/hostile.js';
import { samplePost } from '../support/fixtures.js';
import { connect } from '../../src/api/client.js';
import { StreamPostsError } from '../../src/api/errors.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const POST = { streamId: 's', content: 'hello', contentType: 'rawtext' as const, idempotencyKey: 'k1' };

function subscribe(
  url: string,
  options: Record<string, unknown>,
  onState?: (state: ConnectionState) => void,
): Subscription {
  const subscription = new Subscription(
    { endpoint: resolveEndpoint(url), apiKey: 'k', ...options },
    { command: 'on-stream-post', streamIds: undefined, lastPosts: 0 },
    { onDelivery: () => {}, ...(onState ? { onState } : {}) },
  );
  closers.push(() => subscription.close());
  return subscription;
}

async function failure(promise: Promise<unknown>): Promise<ClientError> {
  return (await promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  )) as ClientError;
}

/** Answers every subscribe command with `sub_ack`s, then closes the connection at once with `code`. */
function acceptThenClose(code: number, reason: string) {
  return (ws: WebSocket) => {
    ws.send(CONNECTED);
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { event: string; requestId?: string };
      ws.send(subAck(frame));
      ws.close(code, reason);
    });
  };
}

describe('reconnects back off when connections end soon after they open', () => {
  it('each attempt reaches connected and sub_ack, yet the delays double up to the cap, each naming the close code and reason', async () => {
    const service = await scriptedService(acceptThenClose(1013, 'slow consumer'));
    const arrivals = new Arrivals();
    const reconnecting: Extract<ConnectionState, { kind: 'reconnecting' }>[] = [];
    const subscription = subscribe(
      service.url,
      // random 1: the delay is the ceiling itself, so the sequence is exact.
      { backoff: { initialMs: 5, maxMs: 80 }, random: () => 1 },
      (state) => {
        if (state.kind === 'reconnecting') reconnecting.push(state);
        arrivals.notify();
      },
    );
    void subscription.start();
    await arrivals.until(
      () => reconnecting.length >= 7,
      10_000,
      () => new Error(`only ${reconnecting.length} reconnects`),
    );
    expect(reconnecting.slice(0, 7).map((state) => state.delayMs)).toEqual([5, 10, 20, 40, 80, 80, 80]);
    expect(reconnecting.slice(0, 7).map((state) => state.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (const state of reconnecting) expect(state.reason).toBe('close 1013, slow consumer');
  });
});

describe('the backoff starts over after a connection that lasted', () => {
  it('a connection that outlived the stable period is followed by the first, shortest delay again', async () => {
    let connections = 0;
    const service = await scriptedService((ws) => {
      connections += 1;
      if (connections <= 2) return acceptThenClose(1013, 'slow consumer')(ws);
      // The third connection lives until the client's first ping, which comes after the stable period.
      ws.send(CONNECTED);
      ws.on('message', (data) => ws.send(subAck(JSON.parse(String(data)))));
      ws.once('ping', () => ws.close(1012, 'restarting'));
    });
    const arrivals = new Arrivals();
    const reconnecting: Extract<ConnectionState, { kind: 'reconnecting' }>[] = [];
    const subscription = subscribe(
      service.url,
      {
        backoff: { initialMs: 5, maxMs: 80 },
        random: () => 1,
        // The first two connections end as soon as they open: well inside a stable period this
        // long even on a machine busy enough to delay a close by hundreds of milliseconds.
        stableMs: 1_000,
        heartbeat: { intervalMs: 1_200, timeoutMs: 10_000 },
      },
      (state) => {
        if (state.kind === 'reconnecting') reconnecting.push(state);
        arrivals.notify();
      },
    );
    void subscription.start();
    await arrivals.until(
      () => reconnecting.length >= 3,
      10_000,
      () => new Error(`only ${reconnecting.length} reconnects`),
    );
    expect(reconnecting.slice(0, 3).map((state) => [state.delayMs, state.reason])).toEqual([
      [5, 'close 1013, slow consumer'],
      [10, 'close 1013, slow consumer'],
      [5, 'close 1012, restarting'],
    ]);
  });
});

describe('a re-subscription refused for a passing reason', () => {
  /** Connection 1 acknowledges (no history follows) and closes with 1012; connection 2 answers the subscribe with `code`; connection 3 accepts. */
  function refuseOnceAfterRestart(code: string) {
    let connections = 0;
    return (ws: WebSocket) => {
      connections += 1;
      const n = connections;
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { event: string; requestId?: string };
        if (n === 2) {
          ws.send(
            JSON.stringify({
              event: 'error',
              requestId: frame.requestId,
              data: { code, message: 'not now', command: frame.event },
            }),
          );
          return;
        }
        ws.send(subAck(frame));
        if (n === 1) ws.close(1012, 'restarting');
      });
    };
  }

  it.each(['unavailable', 'internal', 'rate-limited'])(
    '%s: reconnects and subscribes again instead of ending',
    async (code) => {
      const service = await scriptedService(refuseOnceAfterRestart(code));
      const arrivals = new Arrivals();
      const states: ConnectionState[] = [];
      const subscription = subscribe(
        service.url,
        { backoff: { initialMs: 5, maxMs: 80 }, random: () => 1 },
        (state) => {
          states.push(state);
          arrivals.notify();
        },
      );
      const done = subscription.start();
      await arrivals.until(
        () => states.filter((state) => state.kind === 'ready').length >= 3,
        10_000,
        () => new Error(`states: ${states.map((state) => state.kind).join(', ')}`),
      );
      const reasons = states.flatMap((state) => (state.kind === 'reconnecting' ? [state.reason] : []));
      expect(reasons).toEqual(['close 1012, restarting', `the service refused the subscription: ${code}: not now`]);
      await subscription.close();
      await done;
    },
  );

  it('forbidden on a re-subscription still ends the subscription', async () => {
    const service = await scriptedService(refuseOnceAfterRestart('forbidden'));
    const subscription = subscribe(service.url, { backoff: { initialMs: 5, maxMs: 80 }, random: () => 1 });
    const error = await failure(subscription.start());
    expect(error.kind).toBe('refused');
    expect(error.code).toBe('forbidden');
  });
});

describe('every wait for the service is bounded', () => {
  it('a TCP peer that never answers the upgrade: a timeout naming the upgrade', async () => {
    const url = await silentTcpService();
    const connection = new Connection({ endpoint: resolveEndpoint(url), apiKey: 'k', timeoutMs: 300 }).start();
    closers.push(() => connection.close());
    const error = await failure(connection.done);
    expect(error.kind).toBe('timeout');
    expect(error.message).toMatch(
      /^timed out after 300ms waiting for the reply to the WebSocket upgrade from ws:\/\/127\.0\.0\.1:\d+\/v1\/ws$/,
    );
  });

  it('a service that upgrades and then says nothing: the subscription ends with a timeout naming sub_ack and the silence', async () => {
    const service = await scriptedService(() => {});
    const error = await failure(subscribe(service.url, { timeoutMs: 300 }).start());
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('waiting for sub_ack (the reply to on-stream-post)');
    expect(error.message).toContain('it has sent nothing on this connection');
  });

  it('a service that says connected and never acknowledges a post: sent again on a new connection, then a timeout naming the ack and the key', async () => {
    const sockets: number[] = [];
    const service = await scriptedService((ws) => {
      const socket = sockets.length;
      sockets.push(0);
      ws.send(CONNECTED);
      ws.on('message', () => (sockets[socket] = sockets[socket]! + 1));
    });
    const publisher = new Publisher({ endpoint: resolveEndpoint(service.url), apiKey: 'k', timeoutMs: 300 });
    closers.push(() => publisher.close());
    await publisher.start();
    const error = await failure(publisher.publish(POST));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('waiting for ack (the reply to add-stream-post)');
    expect(error.message).not.toContain('never sent connected');
    expect(error.idempotencyKey).toBe('k1');
    expect(error.message).toContain('publish it again with idempotencyKey "k1" to publish it at most once');
    // Not twice on one socket: this service has not shown that it repeats requestIds.
    expect(sockets).toEqual([1, 1]);
  });

  it('a post without an idempotency key is never sent again for a late ack', async () => {
    let frames = 0;
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', () => (frames += 1));
    });
    const publisher = new Publisher({ endpoint: resolveEndpoint(service.url), apiKey: 'k', timeoutMs: 300 });
    closers.push(() => publisher.close());
    await publisher.start();
    const { idempotencyKey: _key, ...keyless } = POST;
    const error = await failure(publisher.publish(keyless));
    expect([error.kind, error.idempotencyKey, frames]).toEqual(['timeout', undefined, 1]);
  });

  it('an HTTP service that never replies to the REST form: a timeout naming the request', async () => {
    const url = await silentHttpService();
    const error = await failure(publishRest(resolveEndpoint(url), 'k', POST, { timeoutMs: 300 }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toMatch(/waiting for a reply to POST http:\/\/127\.0\.0\.1:\d+\/v1\/streams\/s\/post$/);
  });

  it('once the service has answered, a later reply that never comes is a drop: the connection reconnects', async () => {
    let connections = 0;
    const service = await scriptedService((ws) => {
      connections += 1;
      // The first connection answers and is then closed; the second says connected and nothing more.
      if (connections === 1) acceptThenClose(1012, 'restarting')(ws);
      else ws.send(CONNECTED);
    });
    const arrivals = new Arrivals();
    const reasons: string[] = [];
    const subscription = subscribe(service.url, { timeoutMs: 300, backoff: { initialMs: 5, maxMs: 5 } }, (state) => {
      if (state.kind === 'reconnecting') reasons.push(state.reason);
      arrivals.notify();
    });
    const done = subscription.start();
    await arrivals.until(
      () => reasons.length >= 2,
      10_000,
      () => new Error(`reconnects: ${reasons.join('; ')}`),
    );
    expect(reasons[0]).toBe('close 1012, restarting');
    expect(reasons[1]).toMatch(/^timed out after 300ms waiting for sub_ack \(the reply to on-stream-post\) from ws:/);
    await subscription.close();
    await expect(done).resolves.toBeUndefined();
  });

  it('rejects a timeout that is not a positive number of milliseconds', () => {
    expect(() => new Connection({ endpoint: resolveEndpoint('ws://127.0.0.1:1'), apiKey: 'k', timeoutMs: 0 })).toThrow(
      RangeError,
    );
  });
});

describe('a message over 16 MiB', () => {
  it('ends the connection saying the message was too large, not that it was lost', async () => {
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', () => ws.send('x'.repeat(17 * 1024 * 1024)));
    });
    const error = await failure(subscribe(service.url, { reconnect: false }).start());
    expect(error.kind).toBe('unreachable');
    expect(error.message).toMatch(/ended: a message from the service was too large \(over 16 MiB\)$/);
  });
});

describe('a service that limits the rate without stating it', () => {
  it('a post refused with rate-limited is sent again before any later one: the service accepts them in the order given', async () => {
    // It refuses the 5th post, and every later one until that one comes again, as a service
    // whose bucket stays empty would; it accepts the rest, and records the order.
    const accepted: string[] = [];
    let refusedOnce = false;
    let blockedAt: number | undefined;
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { requestId: string; data: { content: string } };
        const seq = Number(frame.data.content);
        if ((seq === 5 && !refusedOnce) || (blockedAt !== undefined && seq > blockedAt)) {
          if (seq === 5) {
            refusedOnce = true;
            blockedAt = 5;
          }
          ws.send(
            JSON.stringify({
              event: 'error',
              requestId: frame.requestId,
              data: { code: 'rate-limited', message: 'slow down' },
            }),
          );
          return;
        }
        if (seq === blockedAt) blockedAt = undefined;
        accepted.push(frame.data.content);
        const post = samplePost({ id: `id-${seq}`, text: frame.data.content });
        ws.send(JSON.stringify({ event: 'ack', requestId: frame.requestId, data: { post, duplicate: false } }));
      });
    });
    const publisher = new Publisher({ endpoint: resolveEndpoint(service.url), apiKey: 'k' });
    closers.push(() => publisher.close());
    await publisher.start();
    const given = Array.from({ length: 20 }, (_, i) => String(i + 1));
    const outcomes = await Promise.all(
      given.map((content) => publisher.publish({ ...POST, content, idempotencyKey: `k${content}` })),
    );
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(accepted).toEqual(given);
  });
});

describe('an acknowledgement of another subscription', () => {
  it('the library rejects the subscription with unexpected-reply, naming the streams the service answered with', async () => {
    const service = await scriptedService((ws) => {
      ws.send(CONNECTED);
      ws.on('message', (data) => ws.send(subAck(JSON.parse(String(data)), ['not-asked'])));
    });
    const client = await connect({ url: service.url, apiKey: 'k', reconnect: false });
    closers.push(() => client.close());
    const subscription = client.subscribe({ streamIds: ['s'] });
    const error = (await subscription.ready.then(
      () => new Error('expected a rejection'),
      (reason: unknown) => reason,
    )) as StreamPostsError;
    expect(error).toBeInstanceOf(StreamPostsError);
    expect(error.code).toBe('unexpected-reply');
    expect(error.message).toContain('"not-asked"');
  });
});
