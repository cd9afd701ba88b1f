import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { startServer, type CoreServer } from '../../src/server/assemble.js';
import { afterTest, connectAs, http, KEYS, publishOn, subscribeAs, type TestClient } from '../support/harness.js';
import { RedisServer } from '../support/redis-server.js';

// A publish held by Redis for the whole pause (8 s) must still be answered: generous bounds.
const WAIT_MS = 40_000;
const PAUSE_MS = 8_000;

async function oneInstance() {
  const redis = await RedisServer.start({ config: ['--enable-debug-command', 'yes'] });
  afterTest(() => redis.stop());
  const server = await startServer({
    seed: DEMO_SEED,
    port: 0,
    rateLimit: 0,
    redis: { url: redis.url, prefix: 'outcome:' },
  });
  afterTest(() => server.close());
  const admin = createClient({ url: redis.url });
  await admin.connect();
  afterTest(() => admin.close());
  return { server, admin };
}

type Admin = Awaited<ReturnType<typeof oneInstance>>['admin'];

interface Answer {
  ok: boolean;
  code?: string;
  message?: string;
}

/** One publish over the WebSocket or over REST, as its answer. */
async function publishOnce(
  via: TestClient | CoreServer,
  content: string,
  idempotencyKey: string | undefined,
): Promise<Answer> {
  const data = { streamId: 'macro-wire', content, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
  if ('request' in via) {
    const reply = await publishOn(via, data, WAIT_MS);
    return reply.event === 'ack' ? { ok: true } : { ok: false, code: reply.data.code, message: reply.data.message };
  }
  const reply = await http(via, 'POST', '/v1/streams/macro-wire/post', {
    key: KEYS.macroWire,
    body: { content, contentType: 'rawtext', ...(idempotencyKey === undefined ? {} : { idempotencyKey }) },
  });
  return reply.status < 300
    ? { ok: true }
    : { ok: false, code: reply.body.error.code, message: reply.body.error.message };
}

async function historyTexts(server: CoreServer): Promise<string[]> {
  const reply = await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=100', { key: KEYS.alice });
  expect(reply.status).toBe(200);
  return (reply.body.posts as { text: string }[]).map((post) => post.text);
}

/**
 * A publisher that does what each answer says: `unavailable` (nothing was stored) → publish
 * again; an outcome said to be unknown → again with the same key, or, without one, only if the
 * stream's history lacks it. Returns the answers it got.
 */
async function publishAsTold(
  server: CoreServer,
  via: TestClient | CoreServer,
  content: string,
  idempotencyKey: string | undefined,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (;;) {
    const answer = await publishOnce(via, content, idempotencyKey);
    answers.push(answer);
    if (answer.ok) return answers;
    if (answer.code === 'unavailable') {
      expect(answer.message).toContain('nothing was stored');
      continue;
    }
    expect(answer.message).toContain('may have been stored');
    if (idempotencyKey === undefined && (await historyTexts(server)).includes(content)) return answers;
  }
}

/** Publishes made while `pause` holds Redis, each by a publisher that does as it is told. */
async function publishThrough(pause: (admin: Admin) => Promise<void> | void): Promise<void> {
  const { server, admin } = await oneInstance();
  const subscriber = await subscribeAs(server, KEYS.alice, { streamIds: 'macro-wire', lastPosts: 0 }, WAIT_MS);
  const cases: { via: TestClient | CoreServer; content: string; key?: string }[] = [
    { via: await connectAs(server, KEYS.macroWire), content: 'ws without a key' },
    { via: await connectAs(server, KEYS.macroWire), content: 'ws with a key', key: 'held-by-redis-1' },
    { via: server, content: 'rest without a key' },
    { via: server, content: 'rest with a key', key: 'held-by-redis-2' },
  ];
  await pause(admin);
  const answers = await Promise.all(cases.map((one) => publishAsTold(server, one.via, one.content, one.key)));
  // Each publish was sent while Redis held it past its deadline: refused, never stored.
  for (const first of answers.map((list) => list[0]!)) expect(first).toMatchObject({ ok: false, code: 'unavailable' });
  const marker = await publishOnce(server, 'marker', undefined);
  expect(marker.ok).toBe(true);
  await subscriber.next((m) => m.event === 'stream.post.created' && m.data.text === 'marker', WAIT_MS);
  const delivered = subscriber.messages
    .filter((m) => m.event === 'stream.post.created')
    .map((m) => m.data.text as string);
  const history = await historyTexts(server);
  for (const { content } of cases) {
    expect(delivered.filter((text) => text === content)).toEqual([content]);
    expect(history.filter((text) => text === content)).toEqual([content]);
  }
}

describe('a publish that Redis holds past its deadline', () => {
  it('CLIENT PAUSE … WRITE (a fail-over): "nothing was stored" is true, and the retry it asks for makes one copy', async () => {
    await publishThrough(async (admin) => {
      await admin.sendCommand(['CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE']);
    });
  }, 90_000);

  it('DEBUG SLEEP (a slow command): "nothing was stored" is true, and the retry it asks for makes one copy', async () => {
    // Its reply comes when Redis wakes: not awaited, so the publishes arrive while it sleeps.
    await publishThrough((admin) => void admin.sendCommand(['DEBUG', 'SLEEP', String(PAUSE_MS / 1000)]));
  }, 90_000);
});
