import { createClient } from 'graphql-ws';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { openEvents } from '../support/admin-events.js';
import {
  advanceClock,
  afterTest,
  connect,
  connectAs,
  http,
  KEYS,
  startTestServer,
  type Message,
  type TestClient,
} from '../support/harness.js';
import { getMedia, PNG, put } from '../support/media.js';

const HOUR = 3_600_000;
const METADATA = { headline: 'Rate decision: 50 bp cut', sourceLink: 'https://example.org/decision' };
const TEXT = 'The board cut rates by 50 bp $USD https://example.org/statement';

interface Embargoed {
  post: any;
  mediaUrl: string;
}

/** A REST post an hour ahead of the service clock, with text, metadata and an uploaded image. */
async function publishEmbargoed(server: StreamPostsServer): Promise<Embargoed> {
  const releaseAt = new Date(Date.parse((await server.state()).now) + HOUR).toISOString();
  const reply = await http(server, 'POST', '/v1/streams/macro-wire/post', {
    key: KEYS.macroWire,
    body: {
      content: TEXT,
      contentType: 'rawtext',
      releaseAt,
      metadata: METADATA,
      uploadMedia: [{ mimeType: 'image/png' }],
    },
  });
  expect(reply.status).toBe(201);
  expect((await put(reply.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
  return { post: reply.body.post, mediaUrl: reply.body.post.metadata.media[0].url };
}

/** The post as anyone but its owner may see it before the release. */
function withheld(post: any) {
  return { ...post, text: null, metadata: null, hidden: true };
}

/** Asserts a tree item of the post says nothing of its content. */
function expectBlankItem(item: Message | undefined, post: any): void {
  expect(item).toMatchObject({ _id: post.id, hidden: true, body: '', en: '' });
  expect(item).not.toHaveProperty('link');
  expect(item).not.toHaveProperty('coin');
  expect(JSON.stringify(item)).not.toMatch(/Rate decision|example\.org|cut rates/);
}

const isPost = (id: string) => (message: Message) => message.data?.id === id || message['_id'] === id;

/**
 * Every way a post reaches a reader, opened by bob (a follower of macro-wire, not its owner),
 * each live once this resolves: a tree feed sends no acknowledgement, so its first history item
 * (macro-wire has posts from the seed) says it is.
 */
async function openReaders(server: StreamPostsServer, lastPosts: number) {
  const query = { streamIds: 'macro-wire', lastPosts: String(lastPosts) };
  const ours = await connectAs(server, KEYS.bob);
  expect((await ours.request('on-stream-post', { streamIds: 'macro-wire', lastPosts })).event).toBe('sub_ack');
  const hosted = await connect(server, {
    path: '/v1/ws/on-stream-post',
    key: KEYS.bob,
    keyInQuery: true,
    hosted: true,
    query,
  });
  expect((await hosted.nextEvent('sub_ack')).event).toBe('sub_ack');
  const tree = await connect(server, { path: '/v1/ws/on-stream-post-tree', key: KEYS.bob, keyInQuery: true, query });
  const graphqlTree = await connect(server, {
    path: '/graphql',
    key: KEYS.bob,
    keyInQuery: true,
    query: { ...query, format: 'tree' },
  });
  await Promise.all([tree.next(), graphqlTree.next()]);
  return { ours, hosted, tree, graphqlTree };
}

/** `streamPostCreated` results over graphql-ws, as the hosted service's public GraphQL client reads them. */
function graphqlPosts(server: StreamPostsServer, lastPosts: number): { posts: any[]; next: () => Promise<any> } {
  const client = createClient({
    url: `${server.url}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { apiKey: KEYS.bob },
    retryAttempts: 0,
  });
  afterTest(() => client.dispose());
  const iterator = client.iterate<{ streamPostCreated: any }>({
    query: `subscription { streamPostCreated(streamIds: ["macro-wire"], lastPosts: ${lastPosts}) { id text hidden releaseAt } }`,
  });
  const posts: any[] = [];
  return {
    posts,
    next: async () => {
      const result = await iterator.next();
      if (result.done || result.value.errors) throw new Error(`no post: ${JSON.stringify(result.value)}`);
      const post = result.value.data!.streamPostCreated;
      posts.push(post);
      return post;
    },
  };
}

/** A visible post published now: what a reader gets after the hidden one, so nothing before it was held back by chance. */
async function marker(server: StreamPostsServer): Promise<any> {
  const reply = await http(server, 'POST', '/v1/streams/macro-wire/post', {
    key: KEYS.macroWire,
    body: { content: 'marker', contentType: 'rawtext' },
  });
  return reply.body.post;
}

async function listed(server: StreamPostsServer, key: string, id: string): Promise<any> {
  const reply = await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=100', { key });
  expect(reply.status).toBe(200);
  return (reply.body.posts as any[]).find((post) => post.id === id);
}

describe('an embargoed post (text, metadata and an uploaded image) before and after its release', () => {
  it('reaches a non-owner withheld on every path, its owner whole, and everyone whole once released', async () => {
    const server = await startTestServer({ hostedHiddenPosts: 'push' });
    const live = await openReaders(server, 1);
    const { post, mediaUrl } = await publishEmbargoed(server);
    expect(post).toMatchObject({ text: TEXT, metadata: { ...METADATA }, hidden: true });
    const closed = withheld(post);

    // Pushed live, our dialect and the hosted one (asked to push hidden posts), and both tree feeds.
    expect((await live.ours.next(isPost(post.id))).data).toEqual(closed);
    expect((await live.hosted.next(isPost(post.id))).data).toEqual(closed);
    expectBlankItem(await live.tree.next(isPost(post.id)), post);
    expectBlankItem(await live.graphqlTree.next(isPost(post.id)), post);
    // History and replays.
    const replay = await openReaders(server, 5);
    expect((await replay.ours.next(isPost(post.id))).data).toEqual(closed);
    expect((await replay.hosted.next(isPost(post.id))).data).toEqual(closed);
    expectBlankItem(await replay.tree.next(isPost(post.id)), post);
    expectBlankItem(await replay.graphqlTree.next(isPost(post.id)), post);
    // REST, to a follower and to the owner (its stream key, and its user's reader key).
    expect(await listed(server, KEYS.bob, post.id)).toEqual(closed);
    expect(await listed(server, KEYS.macroWire, post.id)).toEqual(post);
    expect(await listed(server, KEYS.newsdesk, post.id)).toEqual(post);
    // The dashboard without an admin token is anybody's.
    const dashboard = await openEvents(server.httpUrl);
    const snapshot = (await dashboard.next('snapshot')).data.posts as any[];
    expect(snapshot.find((shown) => shown.id === post.id)).toEqual(closed);
    // Media: not there but for the owner's keys.
    expect((await getMedia(mediaUrl)).status).toBe(404);
    expect((await getMedia(mediaUrl, KEYS.bob)).status).toBe(404);
    expect((await getMedia(mediaUrl, KEYS.alice)).status).toBe(404);
    // Every key of the owning user is the owner's: the stream's, its reader key, another stream's it owns.
    for (const key of [KEYS.macroWire, KEYS.newsdesk, KEYS.cryptoLegal]) {
      const own = await getMedia(mediaUrl, key);
      expect(own.status).toBe(200);
      expect(own.bytes.equals(PNG)).toBe(true);
    }

    await advanceClock(server, HOUR);
    const open = { ...post, hidden: false };
    expect((await live.ours.nextEvent('stream.post.released')).data).toEqual(open);
    expect((await live.hosted.nextEvent('stream.post.released')).data).toEqual(open);
    for (const feed of [live.tree, live.graphqlTree]) {
      expect(await feed.next(isPost(post.id))).toMatchObject({ _id: post.id, hidden: false, body: TEXT, coin: 'USD' });
    }
    expect((await dashboard.next('post')).data.post).toEqual(open);
    expect(await listed(server, KEYS.bob, post.id)).toEqual(open);
    const released = await getMedia(mediaUrl);
    expect(released.status).toBe(200);
    expect(released.bytes.equals(PNG)).toBe(true);
    const afterwards = await openReaders(server, 5);
    expect((await afterwards.ours.next(isPost(post.id))).data).toEqual(open);
    expect((await afterwards.hosted.next(isPost(post.id))).data).toEqual(open);
  });

  it('the hosted dialect and GraphQL hold it back until the release, then deliver it whole', async () => {
    const server = await startTestServer();
    const hosted = await connect(server, {
      path: '/v1/ws/on-stream-post',
      key: KEYS.bob,
      keyInQuery: true,
      hosted: true,
      query: { streamIds: 'macro-wire', lastPosts: '0' },
    });
    await hosted.nextEvent('sub_ack');
    const { post, mediaUrl } = await publishEmbargoed(server);
    const shown = await marker(server);
    expect((await hosted.nextEvent('stream.post.created')).data.id).toBe(shown.id);
    const graphql = graphqlPosts(server, 1);
    expect((await graphql.next()).id).toBe(shown.id);
    expect((await getMedia(mediaUrl)).status).toBe(404);

    await advanceClock(server, HOUR);
    expect((await hosted.nextEvent('stream.post.created')).data).toEqual({ ...post, hidden: false });
    expect(await graphql.next()).toEqual({ id: post.id, text: TEXT, hidden: false, releaseAt: post.releaseAt });
    expect((await getMedia(mediaUrl)).status).toBe(200);
  });

  it("a publisher's own acknowledgement carries the post whole", async () => {
    const server = await startTestServer();
    const publisher: TestClient = await connectAs(server, KEYS.macroWire);
    const releaseAt = new Date(Date.parse((await server.state()).now) + HOUR).toISOString();
    const ack = await publisher.request('add-stream-post', {
      streamId: 'macro-wire',
      content: TEXT,
      contentType: 'rawtext',
      releaseAt,
    });
    expect(ack.data.post).toMatchObject({ text: TEXT, hidden: true, releaseAt });
  });
});
