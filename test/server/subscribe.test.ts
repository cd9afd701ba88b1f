import { describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { parseSeed } from '../../src/server/service/seed.js';
import type { StreamPostsServer } from '../../src/index.js';
import { AdjustableClock } from '../../src/server/clock.js';
import { startServer as startCoreServer } from '../../src/server/assemble.js';
import { watchWarnings } from '../support/warnings.js';
import {
  adminState,
  advanceClock,
  afterTest,
  connectAs,
  http,
  KEYS,
  publish,
  publishOn,
  startTestServer,
  type Message,
  type TestClient,
} from '../support/harness.js';

const ALL_STREAMS = ['crypto-legal', 'macro-wire', 'whale-alerts'];
const seedText = (index: number) => DEMO_SEED.posts[index]!.content;
const isPost = (m: Message) => m.event === 'stream.post.created' || m.event === 'stream.post.released';
const isTreeItem = (m: Message) => m.event === undefined && typeof m['_id'] === 'string';
const idOf = (m: Message): unknown => (isTreeItem(m) ? m['_id'] : m.data?.id);
const sorted = (ids: readonly string[]) => [...ids].sort();

/** Reads every message in order up to and including the `count`-th one about post `id`. */
async function readThrough(client: TestClient, id: string, count = 1): Promise<Message[]> {
  const read: Message[] = [];
  for (let seen = 0; seen < count;) {
    const message = await client.next();
    read.push(message);
    if ((isPost(message) || isTreeItem(message)) && idOf(message) === id) seen += 1;
  }
  return read;
}

/** For each client, the texts of the post events it gets up to one marker post published to macro-wire. */
async function textsEachUntilMarker(server: StreamPostsServer, clients: TestClient[]): Promise<string[][]> {
  const marker = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
  const texts: string[][] = [];
  for (const client of clients)
    texts.push((await readThrough(client, marker.id)).filter(isPost).map((m) => m.data.text));
  return texts;
}

async function textsUntilMarker(server: StreamPostsServer, client: TestClient): Promise<string[]> {
  return (await textsEachUntilMarker(server, [client]))[0]!;
}

/** One publisher connection for many posts. */
async function publisherFor(server: StreamPostsServer, key: string) {
  const client = await connectAs(server, key);
  return async (data: Record<string, unknown>) => {
    const reply = await publishOn(client, data);
    if (reply.event !== 'ack') throw new Error(`publish failed: ${JSON.stringify(reply)}`);
    return reply.data.post;
  };
}

describe('streamIds', () => {
  it.each([
    ['omitted', {}],
    ['empty', { streamIds: '' }],
    ['only commas and spaces', { streamIds: ' , ,' }],
    ['an empty array', { streamIds: [] }],
  ])("%s: all of the user's streams", async (_name, data) => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    const ack = await alice.request('on-stream-post', data);
    expect(ack.event).toBe('sub_ack');
    expect(sorted(ack.data.streamIds)).toEqual(ALL_STREAMS);
    const bob = await connectAs(server, KEYS.bob);
    expect(sorted((await bob.request('on-stream-post', data)).data.streamIds)).toEqual(['macro-wire', 'whale-alerts']);
    await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'legal news' });
    expect(await textsUntilMarker(server, alice)).toEqual(['legal news', 'marker']);
  });

  it.each([
    ['one id', 'macro-wire', ['macro-wire']],
    ['spaces around ids', '  macro-wire ,crypto-legal  ', ['crypto-legal', 'macro-wire']],
    ['an array', [' crypto-legal', 'macro-wire '], ['crypto-legal', 'macro-wire']],
  ])('%s: only the named streams', async (_name, streamIds, expected) => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    const ack = await alice.request('on-stream-post', { streamIds, lastPosts: 0 });
    expect(ack.data).toMatchObject({ command: 'on-stream-post', lastPosts: 0 });
    expect(sorted(ack.data.streamIds)).toEqual(expected);
    await publish(server, KEYS.whaleAlerts, {
      streamId: 'whale-alerts',
      content: 'not subscribed',
      customTarget: 'BTC',
    });
    if (expected.includes('crypto-legal'))
      await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'legal' });
    expect(await textsUntilMarker(server, alice)).toEqual([
      ...(expected.includes('crypto-legal') ? ['legal'] : []),
      'marker',
    ]);
  });

  it.each([
    ['alice', KEYS.alice, 'no-such-stream', 'not-found', 'no-such-stream'],
    ['alice', KEYS.alice, 'macro-wire, no-such-stream', 'not-found', 'no-such-stream'],
    ['bob', KEYS.bob, 'crypto-legal', 'forbidden', 'crypto-legal'],
    ['bob', KEYS.bob, ['macro-wire', 'crypto-legal'], 'forbidden', 'crypto-legal'],
  ])('%s subscribing to %j: %s, and nothing is subscribed', async (_user, key, streamIds, code, named) => {
    const server = await startTestServer();
    const client = await connectAs(server, key);
    const reply = await client.request('on-stream-post', { streamIds, lastPosts: 5 });
    expect(reply).toMatchObject({ event: 'error', data: { code, command: 'on-stream-post' } });
    expect(reply.data.message).toContain(named);
    expect((await adminState(server)).subscriptions).toBe(0);
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'before the real subscription' });
    expect((await client.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
    expect((await adminState(server)).subscriptions).toBe(1);
    expect(await textsUntilMarker(server, client)).toEqual(['marker']);
  });
});

describe('lastPosts', () => {
  it('sends up to N from each stream, oldest first, right after sub_ack', async () => {
    const server = await startTestServer();
    const post = await publisherFor(server, KEYS.macroWire);
    for (const n of [1, 2, 3]) await post({ streamId: 'macro-wire', content: `macro ${n}` });
    const alice = await connectAs(server, KEYS.alice);
    alice.send({ event: 'on-stream-post', data: { lastPosts: 2 } });
    const ack = await alice.next();
    expect(ack).toMatchObject({ event: 'sub_ack', data: { lastPosts: 2 } });
    // alice selected BTC and ETH on whale-alerts: the seed's SOL post is not hers.
    expect(await textsUntilMarker(server, alice)).toEqual([
      seedText(0),
      seedText(1),
      seedText(3),
      'macro 2',
      'macro 3',
      'marker',
    ]);
  });

  it('history follows custom targets: alice BTC/ETH, bob SOL, the owner all', async () => {
    const server = await startTestServer();
    await publish(server, KEYS.whaleAlerts, { streamId: 'whale-alerts', content: 'eth moved', customTarget: 'ETH' });
    const keys = [KEYS.alice, KEYS.bob, KEYS.newsdesk, KEYS.whaleAlerts];
    const clients = await Promise.all(keys.map((key) => connectAs(server, key)));
    for (const client of clients)
      await client.request('on-stream-post', { streamIds: 'whale-alerts,macro-wire', lastPosts: '10' });
    // The macro-wire seed post is older than every whale-alerts one.
    const owner = [seedText(2), seedText(3), seedText(4), 'eth moved', 'marker'];
    expect(await textsEachUntilMarker(server, clients)).toEqual([
      [seedText(2), seedText(3), 'eth moved', 'marker'],
      [seedText(2), seedText(4), 'marker'],
      owner,
      owner,
    ]);
  });

  it('0 sends no history', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    expect((await alice.request('on-stream-post', { lastPosts: 0 })).data.lastPosts).toBe(0);
    expect(await textsUntilMarker(server, alice)).toEqual(['marker']);
  });

  it('100 is the maximum: the 100 most recent; 101 is invalid', async () => {
    const server = await startTestServer();
    const post = await publisherFor(server, KEYS.macroWire);
    for (let n = 0; n < 105; n += 1) await post({ streamId: 'macro-wire', content: `p${n}` });
    const alice = await connectAs(server, KEYS.alice);
    const tooMany = await alice.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 101 });
    expect(tooMany.data.code).toBe('invalid-argument');
    await alice.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 100 });
    const texts = await textsUntilMarker(server, alice);
    expect(texts).toEqual([...Array.from({ length: 100 }, (_, i) => `p${i + 5}`), 'marker']);
  });

  it('history comes before live posts, each post once, even when published during subscribe', async () => {
    const server = await startTestServer();
    const post = await publisherFor(server, KEYS.macroWire);
    const alice = await connectAs(server, KEYS.alice);
    alice.send({ event: 'on-stream-post', data: { streamIds: 'macro-wire', lastPosts: 100 } });
    const published = await Promise.all([1, 2, 3].map((n) => post({ streamId: 'macro-wire', content: `race ${n}` })));
    const read = await readThrough(alice, published.at(-1).id);
    expect(read[0]?.event).toBe('sub_ack');
    const ids = read.slice(1).map((m) => m.data.id as string);
    expect(read.slice(1).every((m) => m.event === 'stream.post.created')).toBe(true);
    expect(ids).toEqual(sorted([...new Set(ids)]));
    expect(ids.slice(-3)).toEqual(published.map((p: { id: string }) => p.id));
  });

  it('a hidden post in history is sent hidden', async () => {
    const server = await startTestServer();
    const releaseAt = new Date(Date.now() + 3_600_000).toISOString();
    const hidden = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'secret', releaseAt });
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 1 });
    expect(await alice.next()).toEqual({
      event: 'stream.post.created',
      data: { ...hidden, text: null, metadata: null, hidden: true },
    });
  });
});

describe('custom targets, live', () => {
  it('alice gets BTC and ETH, bob SOL, the owner (reader or stream key) everything', async () => {
    const server = await startTestServer();
    const keys = [KEYS.alice, KEYS.bob, KEYS.newsdesk, KEYS.whaleAlerts];
    const clients = await Promise.all(keys.map((key) => connectAs(server, key)));
    for (const client of clients) expect((await client.request('on-stream-post', {})).event).toBe('sub_ack');
    const post = await publisherFor(server, KEYS.whaleAlerts);
    for (const target of ['BTC', 'ETH', 'SOL'])
      await post({ streamId: 'whale-alerts', content: target, customTarget: target });
    expect(await textsEachUntilMarker(server, clients)).toEqual([
      ['BTC', 'ETH', 'marker'],
      ['SOL', 'marker'],
      ['BTC', 'ETH', 'SOL', 'marker'],
      ['BTC', 'ETH', 'SOL', 'marker'],
    ]);
  });

  it('a follower with no targets selected gets nothing from the custom stream', async () => {
    const seed = parseSeed({
      users: [
        { id: 'owner', name: 'Owner', readerKey: 'sp_test_owner_key', follows: [] },
        { id: 'carol', name: 'Carol', readerKey: 'sp_test_carol_key', follows: ['alerts', 'news'] },
      ],
      streams: [
        {
          id: 'alerts',
          name: 'Alerts',
          owner: 'owner',
          key: 'sp_test_alerts_key',
          custom: true,
          customTargets: ['X', 'Y'],
        },
        { id: 'news', name: 'News', owner: 'owner', key: 'sp_test_news_key' },
      ],
      posts: [{ streamId: 'alerts', content: 'seeded X', contentType: 'rawtext', customTarget: 'X' }],
    });
    const server = await startTestServer({ seed });
    const carol = await connectAs(server, 'sp_test_carol_key');
    expect(sorted((await carol.request('on-stream-post', { lastPosts: 5 })).data.streamIds)).toEqual([
      'alerts',
      'news',
    ]);
    for (const target of ['X', 'Y'])
      await publish(server, 'sp_test_alerts_key', { streamId: 'alerts', content: target, customTarget: target });
    const marker = await publish(server, 'sp_test_news_key', { streamId: 'news', content: 'marker' });
    const read = await readThrough(carol, marker.id);
    expect(read.filter(isPost).map((m) => m.data.text)).toEqual(['marker']);
  });
});

describe('a connection with several subscriptions', () => {
  it('two envelope subscriptions: a post matching both comes once', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    await alice.request('on-stream-post', {});
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'matches both' });
    await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'matches the second' });
    // The marker goes to macro-wire too, so it would also come twice.
    expect(await textsUntilMarker(server, alice)).toEqual(['matches both', 'matches the second', 'marker']);
    expect(alice.rest().filter(isPost)).toEqual([]);
  });

  it('one envelope and one tree subscription: once in each format', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    await alice.request('on-stream-post-tree', { streamIds: 'macro-wire,crypto-legal' });
    const post = await publish(server, KEYS.macroWire, {
      streamId: 'macro-wire',
      content: 'Fed holds; $btc and $ETH up, see https://example.org/fed.',
    });
    const marker = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'legal marker' });
    const read = await readThrough(alice, marker.id);
    expect(read.filter(isPost)).toEqual([{ event: 'stream.post.created', data: post }]);
    const tree = read.filter(isTreeItem);
    expect(tree.map(idOf)).toEqual([post.id, marker.id]);
    expect(tree[0]).toStrictEqual({
      _id: post.id,
      title: 'Macro Wire',
      body: 'Fed holds; $btc and $ETH up, see https://example.org/fed.',
      en: 'Fed holds; $btc and $ETH up, see https://example.org/fed.',
      source: 'Macro Wire',
      link: 'https://example.org/fed',
      time: Date.parse(post.createdAt),
      coin: 'BTC',
      suggestions: [
        { coin: 'BTC', found: ['$btc'] },
        { coin: 'ETH', found: ['$ETH'] },
      ],
      type: 'stream-post',
      contentType: 'rawtext',
      streamId: 'macro-wire',
      hidden: false,
    });
    expect(read).toHaveLength(3);
  });
});

/** The post events a client gets up to post `id`, as [event, post id]. */
async function postEventsThrough(client: TestClient, id: string): Promise<[string | undefined, unknown][]> {
  return (await readThrough(client, id)).filter(isPost).map((m) => [m.event, idOf(m)]);
}

/** The service's clock with the wall clock taken out: it moves only when advanced (`POST /_admin/clock`). */
class StoppedClock extends AdjustableClock {
  readonly #at = Date.now();

  override now(): number {
    return this.#at + this.offsetMs;
  }
}

describe('releases', () => {
  it('over a socket: nothing at releaseAt − 1 ms on the service clock, stream.post.released at releaseAt', async () => {
    // The core server, whose clock can be injected: time passing in the test moves nothing.
    const server = await startCoreServer({ seed: DEMO_SEED, port: 0, rateLimit: 0, clock: new StoppedClock() });
    afterTest(() => server.close());
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const releaseAt = Date.parse((await adminState(server)).now) + 60_000;
    const post = await publish(server, KEYS.macroWire, {
      streamId: 'macro-wire',
      content: 'embargoed',
      releaseAt: new Date(releaseAt).toISOString(),
    });
    expect(post.hidden).toBe(true);

    await advanceClock(server, 59_999);
    const early = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'at releaseAt - 1 ms' });
    expect(await postEventsThrough(alice, early.id)).toEqual([
      ['stream.post.created', post.id],
      ['stream.post.created', early.id],
    ]);

    await advanceClock(server, 1);
    // Released as the clock reached its time, so before anything published after that.
    const onTime = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'at releaseAt' });
    expect(await postEventsThrough(alice, onTime.id)).toEqual([
      ['stream.post.released', post.id],
      ['stream.post.created', onTime.id],
    ]);
  });

  it.each([
    ['an hour', 3_600_000, 3_600_001],
    ["90 days (beyond setTimeout's limit)", 90 * 86_400_000, 91 * 86_400_000],
  ])('a post released %s ahead: hidden at once, revealed at releaseAt', async (_name, aheadMs, advanceMs) => {
    const overflow = watchWarnings('TimeoutOverflowWarning');
    afterTest(overflow.stop);
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const tree = await connectAs(server, KEYS.bob);
    await tree.request('on-stream-post-tree', { streamIds: 'macro-wire' });
    const content = 'Rates cut 50bp $ETH https://example.org/cut';
    const releaseAt = new Date(Date.now() + aheadMs).toISOString();
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content, releaseAt });
    expect(post).toMatchObject({ text: content, hidden: true, releaseAt });

    const marker = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' });
    const envelopes = (await readThrough(alice, marker.id)).filter(isPost);
    // A timer past 2^31−1 ms fires at once, with this warning, and again every millisecond.
    expect(overflow.seen).toEqual([]);
    expect(envelopes).toEqual([
      { event: 'stream.post.created', data: { ...post, text: null, metadata: null, hidden: true } },
      { event: 'stream.post.created', data: marker },
    ]);
    const items = (await readThrough(tree, marker.id)).filter(isTreeItem);
    expect(items.map(idOf)).toEqual([post.id, marker.id]);
    expect(items[0]).toMatchObject({ _id: post.id, body: '', hidden: true });
    expect(items[0]).not.toHaveProperty('link');
    expect(items[0]).not.toHaveProperty('coin');
    expect((await adminState(server)).scheduledReleases).toBe(1);

    await advanceClock(server, advanceMs);
    expect(await alice.next()).toEqual({ event: 'stream.post.released', data: { ...post, hidden: false } });
    expect(await tree.next()).toMatchObject({
      _id: post.id,
      body: content,
      hidden: false,
      link: 'https://example.org/cut',
      coin: 'ETH',
    });
    expect((await adminState(server)).scheduledReleases).toBe(0);
  });
});

describe('seed post ids', () => {
  /** The ids of every seed post, as the owner of every stream gets them in history. */
  async function historyIds(server: StreamPostsServer): Promise<string[]> {
    const newsdesk = await connectAs(server, KEYS.newsdesk);
    const ack = await newsdesk.request('on-stream-post', { lastPosts: 100 });
    const ids: string[] = [];
    for (let n = 0; n < ack.data.history; n += 1) ids.push((await newsdesk.next(isPost)).data.id);
    newsdesk.close();
    return ids;
  }

  it('are the same on every start, in either store, and after a reset, and sort before every post published later', async () => {
    // `second` keeps its state in memory whatever the project's store: both stores give the same ids.
    const [first, second] = await Promise.all([startTestServer(), startTestServer({ store: 'memory' })]);
    const ids = await historyIds(first);
    expect(ids).toHaveLength(DEMO_SEED.posts.length);
    expect(await historyIds(second)).toEqual(ids);
    const live = await publish(first, KEYS.macroWire, { streamId: 'macro-wire', content: 'after the seed' });
    expect(ids.every((id) => id < live.id)).toBe(true);
    expect((await http(first, 'POST', '/_admin/reset', { body: {} })).status).toBe(200);
    expect(await historyIds(first)).toEqual(ids);
  });

  it('differ between seeds only for the posts that differ', async () => {
    const changed = structuredClone(DEMO_SEED);
    changed.posts[0]!.content = 'another first post';
    const [demo, edited] = await Promise.all([startTestServer(), startTestServer({ seed: parseSeed(changed) })]);
    const [demoIds, editedIds] = await Promise.all([historyIds(demo), historyIds(edited)]);
    expect(editedIds.slice(1)).toEqual(demoIds.slice(1));
    expect(editedIds[0]).not.toBe(demoIds[0]);
  });
});
