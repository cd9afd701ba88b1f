import { describe, expect, it } from 'vitest';
import { StreamPostsError, type ClientState } from '../../src/index.js';
import { startTestServer } from '../support/harness.js';
import { RecordingLogger } from '../support/logger.js';
import { aliceOnMacroWire, ids, libraryClient, take } from '../support/api.js';

const reconnects = (states: ClientState[]) =>
  states.filter((state): state is Extract<ClientState, { kind: 'reconnecting' }> => state.kind === 'reconnecting');

describe('an injected close', () => {
  it.each([1012, 1001, 1011])(
    'with %i mid-burst: the client reconnects with backoff and delivers every post once, in order',
    async (code) => {
      const server = await startTestServer();
      const { reader, events } = await aliceOnMacroWire(server);
      const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);
      const published: string[] = [];
      const postBurst = async (i: number) =>
        published.push((await publisher.publish({ streamId: 'macro-wire', content: `burst ${i}` })).post.id);

      for (let i = 0; i < 5; i += 1) await postBurst(i);
      const fault = await server.faults.add({ type: 'close', code, reason: 'injected', scope: { user: 'alice' } });
      expect(fault).toMatchObject({ type: 'close', code, applied: 1 });
      // The rest of the burst goes out while the reader is away.
      for (let i = 5; i < 10; i += 1) await postBurst(i);

      expect(ids(await take(events, 10))).toEqual(published);
      await reader.until(() => reader.states.filter((state) => state.kind === 'ready').length === 2);
      const [drop] = reconnects(reader.states);
      expect(drop).toMatchObject({ reason: `close ${code}, injected`, attempt: 1 });
      expect(drop!.delayMs).toBeGreaterThan(0);
      expect(server.faults.list()).toEqual([]);
    },
  );

  it('with 4401: the client stops (unauthorized) and does not reconnect', async () => {
    const server = await startTestServer();
    const reader = await libraryClient(server, server.keys.readers['alice']!);
    const subscription = reader.client.subscribe();
    await subscription.ready;
    const ended = subscription[Symbol.asyncIterator]().next();
    await server.faults.add({ type: 'close', code: 4401, reason: 'unauthorized' });
    const error = await ended.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('unauthorized');
    expect(reconnects(reader.states)).toEqual([]);
  });

  it('applies only to the connections its scope names', async () => {
    const server = await startTestServer();
    const alice = await libraryClient(server, server.keys.readers['alice']!);
    const bob = await libraryClient(server, server.keys.readers['bob']!);
    const [aliceId, bobId] = server.connections().map((connection) => connection.id);
    expect((await server.faults.add({ type: 'close', code: 1012, scope: { connection: bobId! } })).applied).toBe(1);
    await bob.until(() => reconnects(bob.states).length === 1);
    expect((await server.faults.add({ type: 'close', scope: { connection: 'c999' } })).applied).toBe(0);
    expect(reconnects(alice.states)).toEqual([]);
    expect(server.connections().map((connection) => connection.id)).toContain(aliceId);
  });

  it('scoped by a key: applies to the connections opened with that key (which they no longer hold)', async () => {
    const server = await startTestServer();
    const alice = await libraryClient(server, server.keys.readers['alice']!);
    const bob = await libraryClient(server, server.keys.readers['bob']!);
    const fault = await server.faults.add({ type: 'close', code: 1012, scope: { key: server.keys.readers['bob']! } });
    expect(fault).toMatchObject({ applied: 1, scope: { keyOwner: 'bob' } });
    await bob.until(() => reconnects(bob.states).length === 1);
    expect(reconnects(alice.states)).toEqual([]);
  });
});

describe('refuse-connections', () => {
  it('refuses upgrades with its status until cleared; the client keeps retrying, then resubscribes and replays', async () => {
    const server = await startTestServer();
    const { reader, events } = await aliceOnMacroWire(server);
    const { client: publisher } = await libraryClient(server, server.keys.streams['macro-wire']!);

    const refusal = await server.faults.add({ type: 'refuse-connections', status: 503, scope: { user: 'alice' } });
    await server.faults.add({ type: 'close', code: 1012, scope: { user: 'alice' } });
    const during = (await publisher.publish({ streamId: 'macro-wire', content: 'while refused' })).post.id;
    await reader.until(() => reconnects(reader.states).length >= 2);
    expect(reconnects(reader.states)[1]!.reason).toContain('answered with HTTP 503 Service Unavailable');
    // Only alice's key is refused: the publisher (newsdesk's stream key) still connects.
    const { client: another } = await libraryClient(server, server.keys.streams['macro-wire']!);
    expect(another.userId).toBe('newsdesk');

    expect(server.faults.clear(refusal.id)).toBe(1);
    expect(ids(await take(events, 1))).toEqual([during]);
    const after = (await publisher.publish({ streamId: 'macro-wire', content: 'after' })).post.id;
    expect(ids(await take(events, 1))).toEqual([after]);
  });

  it('with durationMs clears itself', async () => {
    const logger = new RecordingLogger();
    const server = await startTestServer({ logger });
    const expired = new Promise<void>((resolve) =>
      logger.onLine((line) => line.message === 'fault cleared' && line.fields['why'] === 'expired' && resolve()),
    );
    const fault = await server.faults.add({ type: 'refuse-connections', status: 429, durationMs: 50 });
    expect(Date.parse(fault.expiresAt!) - Date.parse(fault.createdAt)).toBeGreaterThanOrEqual(50);
    await expired;
    expect(server.faults.list()).toEqual([]);
    const reader = await libraryClient(server, server.keys.readers['bob']!);
    expect(reader.client.userId).toBe('bob');
  });
});
