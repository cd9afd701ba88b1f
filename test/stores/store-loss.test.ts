import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { connect as connectLibrary } from '../../src/api/client.js';
import { startServer as startLibraryServer } from '../../src/api/server.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { startServer, type CoreServer } from '../../src/server/assemble.js';
import {
  afterTest,
  connect,
  connectAs,
  http,
  KEYS,
  type TestClient,
  publishOn,
  subscribeAs,
} from '../support/harness.js';
import { RecordingLogger } from '../support/logger.js';
import { until } from '../support/poll.js';
import { RedisServer } from '../support/redis-server.js';

// Deliveries through Redis on a loaded machine: generous, never the point of a test.
const WAIT_MS = 20_000;
const PREFIX = 'loss:';
let redis: RedisServer | undefined;

/** A Redis of the test's own, stopped after everything the test opened on it is closed. */
async function startRedis(options: Parameters<typeof RedisServer.start>[0] = {}): Promise<RedisServer> {
  const started = await RedisServer.start(options);
  afterTest(() => started.stop());
  redis = started;
  return started;
}

/** Every line an instance logs, to wait on and to count. */
class LogLines extends RecordingLogger {
  /** Warnings that the store went unusable, by cause. */
  unusable(cause: string): number {
    return this.lines.filter((line) => line.message === 'store unusable' && line.fields['cause'] === cause).length;
  }
}

interface Instance {
  server: CoreServer;
  logs: LogLines;
}

/** Two instances on one keyspace of a Redis of the test's own. */
async function twoInstances(config: readonly string[] = []): Promise<[Instance, Instance]> {
  const own = await startRedis({ config });
  const started: Instance[] = [];
  for (let i = 0; i < 2; i += 1) {
    const logs = new LogLines();
    const server = await startServer({
      seed: DEMO_SEED,
      port: 0,
      rateLimit: 0,
      redis: { url: own.url, prefix: PREFIX },
      logger: logs,
    });
    afterTest(() => server.close());
    started.push({ server, logs });
  }
  return started as [Instance, Instance];
}

async function admin() {
  const client = createClient({ url: redis!.url });
  // A restart of the test's Redis drops this connection too; it reconnects.
  client.on('error', () => {});
  await client.connect();
  afterTest(() => client.close());
  return client;
}

async function subscribe(server: CoreServer, lastPosts = 0): Promise<TestClient> {
  return subscribeAs(server, KEYS.alice, { streamIds: 'macro-wire', lastPosts }, WAIT_MS);
}

/** Texts of the posts a subscriber got, once `last` has come. */
async function textsUntil(client: TestClient, last: string): Promise<string[]> {
  await client.next((m) => m.event === 'stream.post.created' && m.data.text === last, WAIT_MS);
  return client.messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.text as string);
}

/** `GET /readyz` until `check` accepts it; returns its body. */
async function untilReady(server: CoreServer, check: (status: number, body: any) => boolean): Promise<any> {
  let body: any;
  await until(
    async () => {
      const reply = await http(server, 'GET', '/readyz');
      body = reply.body;
      return check(reply.status, reply.body);
    },
    'GET /readyz to answer as expected',
    WAIT_MS,
  );
  return body;
}

const ready = (status: number) => status === 200;

/**
 * What every loss must look like, whatever lost the data: subscribers on both instances are
 * closed with 1012; the seed's keys still work (a new connection, REST); a publish on one
 * instance reaches a new subscriber on the other, each post once (the instance that did not
 * load the seed again does not drop new events as already seen); a library client replays.
 */
async function expectSurvived(
  [a, b]: [Instance, Instance],
  subscribers: TestClient[],
  replaying: AsyncIterator<{ post: { text: string | null } }>,
): Promise<void> {
  for (const subscriber of subscribers) expect((await subscriber.closed).code).toBe(1012);
  for (const { server } of [a, b]) {
    const rest = await http(server, 'GET', '/v1/streams', { key: KEYS.alice });
    expect(rest.status).toBe(200);
  }
  const onB = await subscribe(b.server);
  const onA = await subscribe(a.server);
  const publisherA = await connectAs(a.server, KEYS.macroWire);
  const publisherB = await connectAs(b.server, KEYS.macroWire);
  const sent = ['after 1 on a', 'after 2 on b', 'after 3 on a'];
  for (const [i, text] of sent.entries()) {
    const reply = await publishOn(
      i % 2 === 0 ? publisherA : publisherB,
      { streamId: 'macro-wire', content: text },
      WAIT_MS,
    );
    expect(reply.event).toBe('ack');
  }
  expect(await textsUntil(onB, 'after 3 on a')).toEqual(sent);
  expect(await textsUntil(onA, 'after 3 on a')).toEqual(sent);
  // The library's subscriber reconnects by itself and gets what came after, once.
  const replayed: (string | null)[] = [];
  while (!replayed.includes('after 3 on a')) {
    const next = await replaying.next();
    if (next.done) break;
    replayed.push(next.value.post.text);
  }
  const after = replayed.filter((text) => text?.startsWith('after'));
  expect(after).toEqual(sent);
  for (const { server } of [a, b]) await untilReady(server, ready);
}

/** Subscribers on both instances that got every post acked before the loss, once each. */
async function beforeTheLoss([a, b]: [Instance, Instance]): Promise<{
  subscribers: TestClient[];
  replaying: AsyncIterator<{ post: { text: string | null } }>;
}> {
  const subscribers = [await subscribe(a.server), await subscribe(b.server)];
  const library = await connectLibrary({ url: b.server.url, apiKey: KEYS.alice });
  afterTest(() => library.close());
  const subscription = library.subscribe({ streamIds: ['macro-wire'] });
  await subscription.ready;
  const publishers = [await connectAs(a.server, KEYS.macroWire), await connectAs(b.server, KEYS.macroWire)];
  const sent = Array.from({ length: 10 }, (_, i) => `before ${i}`);
  for (const [i, text] of sent.entries())
    expect((await publishOn(publishers[i % 2]!, { streamId: 'macro-wire', content: text }, WAIT_MS)).event).toBe('ack');
  // While Redis keeps its data, no acked post is lost: every subscriber has each, once.
  for (const subscriber of subscribers) expect(await textsUntil(subscriber, 'before 9')).toEqual(sent);
  const replaying = subscription[Symbol.asyncIterator]();
  const seen: (string | null)[] = [];
  while (seen.length < sent.length) seen.push((await replaying.next()).value.post.text);
  expect(seen).toEqual(sent);
  for (const publisher of publishers) publisher.close();
  return { subscribers, replaying };
}

describe('a Redis that loses its data, under two instances', () => {
  it('FLUSHALL: the next publish loads the seed again, every subscriber is told 1012, keys keep working', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const { subscribers, replaying } = await beforeTheLoss(instances);
    await (await admin()).flushAll();
    // A seed key, while the key table is gone: answered, never 401 / 4401.
    expect((await http(b.server, 'GET', '/v1/streams', { key: KEYS.bob })).status).toBe(200);
    const early = await connect(a.server, { key: KEYS.newsdesk });
    const greeting = await early.next((m) => m.event !== undefined, WAIT_MS);
    expect(greeting.event).toBe('connected');
    const publisher = await connectAs(a.server, KEYS.macroWire);
    expect(
      (await publishOn(publisher, { streamId: 'macro-wire', content: 'the first after the flush' }, WAIT_MS)).event,
    ).toBe('ack');
    await expectSurvived(instances, subscribers, replaying);
    for (const { logs } of [a, b]) expect(logs.unusable('unreachable')).toBe(0);
  });

  it('FLUSHALL, then an instance started anew: the one that stayed drops nothing it has not seen', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const { subscribers, replaying } = await beforeTheLoss(instances);
    await (await admin()).flushAll();
    await a.server.close();
    // The new instance finds the keyspace empty and loads the seed, its counter from 1 again.
    const logs = new LogLines();
    const c = await startServer({
      seed: DEMO_SEED,
      port: 0,
      rateLimit: 0,
      redis: { url: redis!.url, prefix: PREFIX },
      logger: logs,
    });
    afterTest(() => c.close());
    expect((await subscribers[0]!.closed).code).toBe(1001);
    await expectSurvived([{ server: c, logs }, b], subscribers.slice(1), replaying);
  });

  it('a restart without persistence: 1012 and unavailable while it is down, /readyz 503; then back without a restart of ours', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const { subscribers, replaying } = await beforeTheLoss(instances);
    const publisher = await connectAs(a.server, KEYS.macroWire);
    await redis!.kill();
    for (const subscriber of subscribers) expect((await subscriber.closed).code).toBe(1012);
    for (const { server } of instances) {
      const down = await untilReady(server, (status) => status === 503);
      expect(down).toMatchObject({ ready: false, reason: 'unreachable' });
    }
    // Liveness is not readiness.
    expect((await http(a.server, 'GET', '/healthz')).status).toBe(200);
    const refused = await publishOn(publisher, { streamId: 'macro-wire', content: 'while Redis is down' }, WAIT_MS);
    expect(refused).toMatchObject({ event: 'error', data: { code: 'unavailable' } });
    const newcomer = await connect(b.server, { key: KEYS.alice });
    const closed = await newcomer.closed;
    expect(closed.code).toBe(1012);
    expect(newcomer.messages.find((m) => m.event === 'error')?.data.code).toBe('unavailable');

    await redis!.restart();
    for (const { server } of instances) await untilReady(server, ready);
    const again = await publishOn(
      publisher,
      { streamId: 'macro-wire', content: 'the first after the restart' },
      WAIT_MS,
    );
    expect(again.event).toBe('ack');
    // The subscribers were closed once, when Redis went away: the new ones follow on.
    await expectSurvived(instances, [], replaying);
    for (const { logs } of instances) expect(logs.unusable('unreachable')).toBe(1);
  });

  it('eviction (allkeys-lru) loses the seed marker: survived as a loss; then noeviction OOM refuses publishes with the cause, logged once', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const { subscribers, replaying } = await beforeTheLoss(instances);
    const redisAdmin = await admin();
    const used = Number(/used_memory:(\d+)/.exec(await redisAdmin.info('memory'))![1]);
    await redisAdmin.configSet({ 'maxmemory-policy': 'allkeys-lru', maxmemory: String(used + 1_000_000) });
    // Filler until Redis has evicted the seed's marker (least recently used: the service is idle).
    for (let batch = 0; await redisAdmin.exists(`${PREFIX}seed`); batch += 1) {
      const multi = redisAdmin.multi();
      for (let i = 0; i < 100; i += 1) multi.set(`filler:${batch}:${i}`, 'x'.repeat(1_000));
      await multi.exec();
    }
    await redisAdmin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '0' });
    // The keys Redis evicted are announced at the next keep-alive round (here, before the publish).
    await Promise.all(instances.map(({ server }) => server.keepAliveRound()));
    const publisher = await connectAs(b.server, KEYS.macroWire);
    expect(
      (await publishOn(publisher, { streamId: 'macro-wire', content: 'the first after the eviction' }, WAIT_MS)).event,
    ).toBe('ack');
    await expectSurvived(instances, subscribers, replaying);

    // Full under noeviction: Redis keeps its data and refuses writes.
    const stay = [await subscribe(a.server), await subscribe(b.server)];
    await redisAdmin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '1' });
    const publishers = [await connectAs(a.server, KEYS.macroWire), publisher];
    for (let i = 0; i < 3; i += 1) {
      for (const one of publishers) {
        const refused = await publishOn(one, { streamId: 'macro-wire', content: `refused ${i}` }, WAIT_MS);
        expect(refused).toMatchObject({ event: 'error', data: { code: 'unavailable' } });
      }
    }
    const rest = await http(a.server, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'refused over REST', contentType: 'rawtext' },
    });
    expect(rest.status).toBe(503);
    expect(rest.body.error.code).toBe('unavailable');
    for (const { server, logs } of instances) {
      expect(await untilReady(server, (status) => status === 503)).toMatchObject({ reason: 'out-of-memory' });
      expect(logs.unusable('out-of-memory')).toBe(1);
    }
    await redisAdmin.configSet('maxmemory', '0');
    for (const { server } of instances) await untilReady(server, ready);
    expect(
      (await publishOn(publishers[0]!, { streamId: 'macro-wire', content: 'after the memory came back' }, WAIT_MS))
        .event,
    ).toBe('ack');
    // Redis kept its data: nobody was closed, nothing refused was delivered, nothing acked was missed.
    for (const subscriber of stay) {
      expect(await textsUntil(subscriber, 'after the memory came back')).toEqual(['after the memory came back']);
    }
    for (const { logs } of instances) await logs.until((line) => line.message === 'store usable again', WAIT_MS);
  });

  it('SCRIPT FLUSH under pipelined publishes: refusals name the missing scripts, nothing is lost, nobody is closed', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const stay = [await subscribe(a.server), await subscribe(b.server)];
    const publisher = await connectAs(a.server, KEYS.macroWire);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'warm' }, WAIT_MS)).event).toBe('ack');
    await (await admin()).scriptFlush();
    const texts = Array.from({ length: 50 }, (_, i) => `pipelined ${i}`);
    texts.forEach((content, i) =>
      publisher.send({
        event: 'add-stream-post',
        data: { streamId: 'macro-wire', content, contentType: 'rawtext' },
        requestId: `p${i}`,
      }),
    );
    const replies: { event?: string; data?: any }[] = [];
    for (let i = 0; i < texts.length; i += 1)
      replies.push(await publisher.next((m) => m.requestId === `p${i}`, WAIT_MS));
    const acked = texts.filter((_, i) => replies[i]!.event === 'ack');
    for (const reply of replies.filter((one) => one.event !== 'ack')) expect(reply.data.code).toBe('unavailable');
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'marker' }, WAIT_MS)).event).toBe('ack');
    for (const subscriber of stay) expect(await textsUntil(subscriber, 'marker')).toEqual(['warm', ...acked, 'marker']);
    // The true cause, once, when there was a refusal; never "cannot reach".
    expect(a.logs.unusable('script-missing')).toBe(acked.length === texts.length ? 0 : 1);
    for (const { logs } of [a, b]) expect(logs.unusable('unreachable')).toBe(0);
    await untilReady(a.server, ready);
  });
});

/**
 * A subscriber that comes back after each 1012 (or a refused subscribe) and asks for the
 * history again, as the library's does; what it got, and when (on the publisher's count of
 * acks) it was told of a loss.
 */
class ComingBack {
  readonly #clients: TestClient[] = [];
  /** The number of acks the publisher had had when each 1012 came. */
  readonly losses: number[] = [];
  #stopped = false;

  constructor(
    server: CoreServer,
    private readonly acks: () => number,
  ) {
    // Once the test ends, its server goes away under the last reconnection.
    void this.#run(server).catch(() => {});
  }

  async #run(server: CoreServer): Promise<void> {
    while (!this.#stopped) {
      const client = await connect(server, { key: KEYS.alice });
      this.#clients.push(client);
      // A 1012 may come before the reply (a loss announced while the subscribe is under way).
      const unlessClosed = <T>(wait: Promise<T>) =>
        Promise.race([wait.catch(() => undefined), client.closed.then(() => undefined)]);
      // A keep-alive round's event may come first.
      const first = await unlessClosed(client.next((m) => m.event === 'connected' || m.event === 'error', WAIT_MS));
      if (first?.event === 'connected') {
        client.send({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 100 }, requestId: 'w' });
        const reply = await unlessClosed(client.next((m) => m.requestId === 'w', WAIT_MS));
        if (reply !== undefined && reply.event !== 'sub_ack') client.close();
      }
      const closed = await client.closed;
      if (closed.code === 1012) this.losses.push(this.acks());
    }
  }

  get #messages() {
    return this.#clients.flatMap((client) => client.messages);
  }

  get delivered(): Set<string> {
    return new Set(this.#messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.text as string));
  }

  /** Every refusal it was sent. */
  get refusals(): { code: string; message: string }[] {
    return this.#messages.filter((m) => m.event === 'error').map((m) => m.data);
  }

  /** Has `text`, or was told of a loss after `acked` acks. */
  accounts(text: string, acked: number): boolean {
    return this.delivered.has(text) || this.losses.some((at) => at >= acked);
  }

  stop(): void {
    this.#stopped = true;
  }
}

describe('eviction that starts while the service runs', () => {
  it('maxmemory 2mb + allkeys-lru under publishes: no acked post lost without a 1012 after its ack; readyz evicting until noeviction', async () => {
    const instances = await twoInstances();
    const [a, b] = instances;
    const redisAdmin = await admin();
    let acks = 0;
    const watchers = [new ComingBack(a.server, () => acks), new ComingBack(b.server, () => acks)];
    afterTest(() => watchers.forEach((watcher) => watcher.stop()));
    const publishers = [await connectAs(a.server, KEYS.macroWire), await connectAs(b.server, KEYS.macroWire)];
    const acked: { text: string; at: number }[] = [];
    const refused: string[] = [];
    const rounds = () => Promise.all(instances.map(({ server }) => server.keepAliveRound()));
    for (let i = 0; i < 300; i += 1) {
      if (i === 30) await redisAdmin.configSet({ maxmemory: '2mb', 'maxmemory-policy': 'allkeys-lru' });
      // Filler from elsewhere, so that Redis has to evict while the service publishes.
      if (i >= 30 && i < 200) await redisAdmin.set(`filler:${i}`, 'x'.repeat(20_000));
      const text = `post ${i} ${'y'.repeat(2_000)}`;
      const reply = await publishOn(publishers[i % 2]!, { streamId: 'macro-wire', content: text }, WAIT_MS);
      if (reply.event === 'ack') {
        acks += 1;
        acked.push({ text, at: acks });
      } else {
        expect(reply.data.code).toBe('unavailable');
        refused.push(reply.data.message);
      }
      if (i % 10 === 9) await rounds();
    }
    expect(Number(/evicted_keys:(\d+)/.exec(await redisAdmin.info('stats'))![1])).toBeGreaterThan(0);
    for (const { server } of instances) {
      expect(await untilReady(server, (status) => status === 503)).toMatchObject({ reason: 'evicting' });
    }
    // Refused while Redis may evict, naming the policy.
    expect(refused.length).toBeGreaterThan(0);
    for (const message of refused) expect(message).toContain('allkeys-lru');
    await redisAdmin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '0' });
    await rounds();
    for (const { server } of instances) await untilReady(server, ready);
    const marker = await publishOn(publishers[0]!, { streamId: 'macro-wire', content: 'marker' }, WAIT_MS);
    expect(marker.event).toBe('ack');
    acks += 1;
    for (const watcher of watchers) {
      await until(() => watcher.delivered.has('marker'), 'the marker to reach each subscriber', WAIT_MS);
      expect(watcher.losses.length).toBeGreaterThan(0);
      for (const { text, at } of acked) expect(watcher.accounts(text, at), text.slice(0, 10)).toBe(true);
      for (const refusal of watcher.refusals) expect(refusal.code).toBe('unavailable');
    }
    for (const { logs } of instances) expect(logs.unusable('evicting')).toBe(1);
  }, 60_000);
});

describe('a Redis full under a policy that evicts', () => {
  it('the refusal names the policy Redis has, not the one of start; the policy read makes it evicting', async () => {
    const instances = await twoInstances();
    const [a] = instances;
    const subscriber = await subscribe(a.server);
    const redisAdmin = await admin();
    await redisAdmin.configSet({ 'maxmemory-policy': 'volatile-lru', maxmemory: '1' });
    const publisher = await connectAs(a.server, KEYS.macroWire);
    const refused = await publishOn(publisher, { streamId: 'macro-wire', content: 'no room' }, WAIT_MS);
    expect(refused).toMatchObject({ event: 'error', data: { code: 'unavailable' } });
    expect(refused.data.message).toContain('out of memory');
    expect(refused.data.message).toContain('volatile-lru');
    expect(refused.data.message).not.toContain('noeviction)');
    // A policy that evicts is a loss announced to subscribers.
    expect((await subscriber.closed).code).toBe(1012);
    await redisAdmin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '0' });
    await a.server.keepAliveRound();
    await untilReady(a.server, ready);
    expect((await publishOn(publisher, { streamId: 'macro-wire', content: 'room again' }, WAIT_MS)).event).toBe('ack');
  });
});

describe('the Redis it starts on', () => {
  it('an evicting maxmemory-policy is refused, naming it and the fix, unless allowEviction', async () => {
    await startRedis({ config: ['--maxmemory-policy', 'allkeys-lru'] });
    const refused = await startLibraryServer({ port: 0, store: redis!.url, redisPrefix: PREFIX }).catch(
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ code: 'store-evicts' });
    expect((refused as Error).message).toContain('allkeys-lru');
    expect((refused as Error).message).toContain('CONFIG SET maxmemory-policy noeviction');
    const logs = new LogLines();
    const server = await startLibraryServer({
      port: 0,
      store: redis!.url,
      redisPrefix: PREFIX,
      allowEviction: true,
      logger: logs,
    });
    afterTest(() => server.close());
    expect((await http(server, 'GET', '/readyz')).body).toEqual({ ready: true });
    expect(logs.lines.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual([
      'Redis may evict keys: posts it evicts are lost',
      'Redis persistence is off (no appendonly, no save points): a restart loses every post',
    ]);
    await expect(startLibraryServer({ allowEviction: true })).rejects.toThrow(TypeError);
  });

  it('with persistence on, nothing is said of it; the memory store is always ready', async () => {
    await startRedis({ persistent: true });
    const logs = new LogLines();
    const server = await startLibraryServer({ port: 0, store: redis!.url, redisPrefix: PREFIX, logger: logs });
    afterTest(() => server.close());
    expect(logs.lines.filter((line) => line.level === 'warn')).toEqual([]);
    const memory = await startLibraryServer({ port: 0 });
    afterTest(() => memory.close());
    const reply = await http(memory, 'GET', '/readyz');
    expect([reply.status, reply.body]).toEqual([200, { ready: true }]);
  });
});
