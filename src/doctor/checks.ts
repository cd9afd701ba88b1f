// The doctor's checks (docs/doctor.md lists them): each opens its own connections, does one
// exchange of the protocol and says what it saw as a flat observation. The same check runs
// against the service and against an in-process `serve`; where the observations differ, the
// check fails at its level. An observation never holds ids, times or texts that differ
// from service to service by nature: only what a client depends on.
import { randomUUID } from 'node:crypto';
import {
  bare,
  connected,
  graphqlSubscription,
  needStreams,
  postOf,
  postsOnRecord,
  publishTest,
  Skip,
  subscribe,
  TEST_TEXT,
  treeFeed,
  writeStream,
  WS_PATH,
  type Level,
  type Observation,
  type Probe,
} from './exchanges.js';
import { dataOf, eventOf, rest } from './wire.js';

export { Skip, type Level, type Observation, type Probe } from './exchanges.js';

export interface Check {
  id: string;
  level: Level;
  /** What it checks, in a few words. */
  title: string;
  /** Writes to the service: runs only with `--allow-writes`. */
  writes?: true;
  run(probe: Probe): Promise<Observation>;
}

function lastPostsCheck(n: number): Check {
  return {
    id: `last-posts.${n}`,
    level: 'MUST',
    title: `lastPosts ${n}: up to ${n} recent posts of each stream, then live`,
    async run(probe) {
      const [streamId] = await needStreams(probe);
      const { reply, history } = await subscribe(probe, { streamIds: streamId, lastPosts: n });
      const onRecord = n === 0 ? 0 : await postsOnRecord(probe, streamId!, n);
      return {
        reply: eventOf(reply) ?? 'none',
        atMostAsked: history.length <= n,
        allOnRecord: onRecord === undefined ? undefined : history.length === onRecord,
      };
    },
  };
}

export const CHECKS: readonly Check[] = [
  {
    id: 'upgrade',
    level: 'MUST',
    title: 'the WebSocket upgrade at /v1/ws (TLS when wss://)',
    async run(probe) {
      return bare(probe, async (wire) => ({
        upgraded: wire.refused === undefined,
        tls: probe.target.wsBase.startsWith('wss:') ? true : undefined,
      }));
    },
  },
  {
    id: 'key.header',
    level: 'MUST',
    title: 'a key in the x-api-key header is accepted',
    run: (probe) => bare(probe, async (wire) => ({ first: eventOf(await wire.next()) ?? 'none' })),
  },
  {
    id: 'key.query',
    level: 'MUST',
    title: 'a key in ?apiKey= is accepted',
    run: (probe) =>
      connected(probe, { path: WS_PATH, query: { apiKey: probe.target.apiKey } }, async (wire) => ({
        first: eventOf(await wire.next()) ?? 'none',
      })),
  },
  {
    id: 'bad-key.message',
    level: 'MUST',
    title: "a bad key's first frame says Invalid secret key (publishers read data.message)",
    run: (probe) =>
      connected(probe, { path: WS_PATH, query: { apiKey: randomUUID() } }, async (wire) => {
        const first = await wire.next();
        const message = dataOf(first)['message'];
        return {
          first: eventOf(first) ?? 'none',
          invalidSecretKey: typeof message === 'string' && message.includes('Invalid secret key'),
        };
      }),
  },
  {
    id: 'bad-key.close',
    level: 'SHOULD',
    title: 'a bad key is closed with 4401',
    run: (probe) =>
      connected(probe, { path: WS_PATH, query: { apiKey: randomUUID() } }, async (wire) => ({
        closeCode: (await wire.closing())?.code ?? 'open',
      })),
  },
  {
    id: 'connected',
    level: 'SHOULD',
    title: 'the bare /v1/ws greets with connected (data.message "connected")',
    run: (probe) =>
      bare(probe, async (wire) => {
        const first = await wire.next();
        return { first: eventOf(first) ?? 'none', message: String(dataOf(first)['message'] ?? '') };
      }),
  },
  {
    id: 'hello',
    level: 'MAY',
    title: 'hello=1 is known: connected carries serverTime',
    run: (probe) =>
      bare(
        probe,
        async (wire) => {
          const first = await wire.next((frame) => eventOf(frame) === 'connected');
          return { serverTime: typeof dataOf(first)['serverTime'] === 'string' };
        },
        { hello: '1' },
      ),
  },
  {
    id: 'subscribe.omitted',
    level: 'MUST',
    title: 'subscribe without streamIds: every followed stream',
    async run(probe) {
      const { reply } = await subscribe(probe, { lastPosts: 0 });
      const streamIds = dataOf(reply)['streamIds'];
      const all = await needStreams(probe);
      return {
        reply: eventOf(reply) ?? 'none',
        allFollowed: Array.isArray(streamIds) && [...streamIds].sort().join() === [...all].sort().join(),
      };
    },
  },
  {
    id: 'subscribe.empty',
    level: 'MUST',
    title: 'subscribe with streamIds "": the same as omitted',
    async run(probe) {
      const all = await needStreams(probe);
      const { reply } = await subscribe(probe, { streamIds: '', lastPosts: 0 });
      const streamIds = dataOf(reply)['streamIds'];
      return {
        reply: eventOf(reply) ?? 'none',
        sameAsOmitted: Array.isArray(streamIds) && [...streamIds].sort().join() === [...all].sort().join(),
      };
    },
  },
  {
    id: 'subscribe.listed',
    level: 'MUST',
    title: 'subscribe with streamIds listed: those streams only',
    async run(probe) {
      const [first] = await needStreams(probe);
      const { reply } = await subscribe(probe, { streamIds: first, lastPosts: 0 });
      const streamIds = dataOf(reply)['streamIds'];
      return { reply: eventOf(reply) ?? 'none', onlyListed: Array.isArray(streamIds) && streamIds.join() === first };
    },
  },
  lastPostsCheck(0),
  lastPostsCheck(1),
  lastPostsCheck(100),
  {
    id: 'last-posts.101',
    level: 'SHOULD',
    title: 'lastPosts 101 is refused (100 a stream at most)',
    async run(probe) {
      const [streamId] = await needStreams(probe);
      const { reply } = await subscribe(probe, { streamIds: streamId, lastPosts: 101 });
      return { reply: eventOf(reply) ?? 'none' };
    },
  },
  {
    id: 'hidden-post',
    level: 'SHOULD',
    title: 'a hidden post shows text null and hidden true to readers (REST)',
    async run(probe) {
      for (const streamId of (await needStreams(probe)).slice(0, 10)) {
        const answer = await rest(probe.target, probe.log, 'GET', `/v1/streams/${encodeURIComponent(streamId)}/posts`, {
          query: { limit: '100' },
        });
        const posts = (answer.json as { posts?: Record<string, unknown>[] } | undefined)?.posts ?? [];
        const hidden = posts.find((post) => post['hidden'] === true);
        if (hidden) return { textNull: hidden['text'] === null, releaseAt: typeof hidden['releaseAt'] === 'string' };
      }
      throw new Skip('no hidden post among the last 100 of any followed stream');
    },
  },
  {
    id: 'url-form',
    level: 'MUST',
    title: 'the URL form /v1/ws/on-stream-post?apiKey=…: the sub_ack first',
    run: (probe) =>
      connected(
        probe,
        { path: `${WS_PATH}/on-stream-post`, query: { apiKey: probe.target.apiKey, lastPosts: '1' } },
        async (wire) => ({ first: eventOf(await wire.next()) ?? 'none' }),
      ),
  },
  {
    id: 'tree-feed.graphql',
    level: 'MUST',
    title: 'the tree feed /graphql?format=tree: tree items only, login KEY ignored',
    run: async (probe) => ({ ...(await treeFeed(probe, '/graphql', { format: 'tree' })), coinWhenCashtag: undefined }),
  },
  {
    id: 'tree-item.coin',
    level: 'SHOULD',
    title: "a tree item names its text's first $CASHTAG in coin",
    async run(probe) {
      const { coinWhenCashtag } = await treeFeed(probe, '/graphql', { format: 'tree', lastPosts: '20' });
      if (coinWhenCashtag === undefined) throw new Skip('no recent post with a $CASHTAG on the tree feed');
      return { coinWhenCashtag };
    },
  },
  {
    id: 'tree-feed.url',
    level: 'MUST',
    title: 'the tree feed /v1/ws/on-stream-post-tree: tree items only',
    run: async (probe) => ({
      ...(await treeFeed(probe, `${WS_PATH}/on-stream-post-tree`, {})),
      coinWhenCashtag: undefined,
    }),
  },
  {
    id: 'ping',
    level: 'MUST',
    title: 'a WebSocket ping is answered with a pong',
    run: (probe) => bare(probe, async (wire) => ({ pong: await wire.ping() })),
  },
  {
    id: 'ping.text',
    level: 'SHOULD',
    title: 'a text "ping" on the tree feed is answered "pong"',
    run: (probe) =>
      connected(probe, { path: '/graphql', query: { format: 'tree', apiKey: probe.target.apiKey } }, async (wire) => {
        wire.send('ping');
        return { pong: (await wire.next((frame) => frame.text === 'pong')) !== undefined };
      }),
  },
  {
    id: 'rest.streams',
    level: 'MUST',
    title: 'REST GET /v1/streams pages with limit and nextToken',
    async run(probe) {
      const first = await rest(probe.target, probe.log, 'GET', '/v1/streams', { query: { limit: '1' } });
      const body = first.json as { streams?: { id?: unknown }[]; nextToken?: unknown } | undefined;
      const streams = body?.streams;
      let paged: boolean | undefined;
      if (Array.isArray(streams) && typeof body?.nextToken === 'string' && body.nextToken !== '') {
        const next = await rest(probe.target, probe.log, 'GET', '/v1/streams', {
          query: { limit: '1', nextToken: body.nextToken },
        });
        const more = (next.json as { streams?: { id?: unknown }[] } | undefined)?.streams;
        paged = Array.isArray(more) && more.length === 1 && more[0]?.id !== streams[0]?.id;
      }
      return {
        status: first.status,
        streams: Array.isArray(streams) ? 'a list' : typeof streams,
        limitHonoured: Array.isArray(streams) ? streams.length <= 1 : undefined,
        nextPageDiffers: paged,
      };
    },
  },
  {
    id: 'rest.posts',
    level: 'MUST',
    title: "REST GET /v1/streams/{id}/posts: a stream's posts with their fields",
    async run(probe) {
      const [streamId] = await needStreams(probe);
      const answer = await rest(probe.target, probe.log, 'GET', `/v1/streams/${encodeURIComponent(streamId!)}/posts`, {
        query: { limit: '2' },
      });
      const posts = (answer.json as { posts?: Record<string, unknown>[] } | undefined)?.posts;
      const post = Array.isArray(posts) ? posts[0] : undefined;
      return {
        status: answer.status,
        posts: Array.isArray(posts) ? 'a list' : typeof posts,
        limitHonoured: Array.isArray(posts) ? posts.length <= 2 : undefined,
        fields:
          post === undefined
            ? undefined
            : ['id', 'streamId', 'createdAt'].every((field) => typeof post[field] === 'string') && 'text' in post,
      };
    },
  },
  {
    id: 'custom-targets',
    level: 'MAY',
    title: "a custom stream lists its targets and the key's selection (read only)",
    async run(probe) {
      for (const id of (await needStreams(probe)).slice(0, 10)) {
        const one = await rest(probe.target, probe.log, 'GET', `/v1/streams/${encodeURIComponent(id)}`);
        const stream = one.json as Record<string, unknown> | undefined;
        if (!Array.isArray(stream?.['customTargets']) || stream['customTargets'].length === 0) continue;
        return { status: one.status, selectedTargets: Array.isArray(stream['selectedTargets']) };
      }
      throw new Skip('the key follows no custom stream (among its first 10)');
    },
  },
  {
    id: 'graphql',
    level: 'SHOULD',
    title: 'GraphQL streamPostCreated over graphql-ws (connectionParams apiKey)',
    run: graphqlSubscription,
  },
  {
    id: 'write.ack',
    level: 'MUST',
    title: 'add-stream-post is acknowledged with the post',
    writes: true,
    async run(probe) {
      const [reply] = await publishTest(probe, {});
      const post = postOf(reply);
      return {
        reply: eventOf(reply) ?? 'none',
        post: typeof post['id'] === 'string',
        text: post['text'] === TEST_TEXT,
      };
    },
  },
  {
    id: 'write.idempotency',
    level: 'MUST',
    title: 'the same idempotencyKey twice publishes once',
    writes: true,
    async run(probe) {
      const [first, second] = await publishTest(probe, { idempotencyKey: `doctor-${randomUUID()}` }, 2);
      return {
        replies: [first, second].map((reply) => eventOf(reply) ?? 'none').join(','),
        duplicate: dataOf(second)['duplicate'] === true,
        samePost: postOf(first)['id'] !== undefined && postOf(first)['id'] === postOf(second)['id'],
      };
    },
  },
  {
    id: 'write.release-at',
    level: 'SHOULD',
    title: 'a post with releaseAt is acknowledged hidden until then',
    writes: true,
    async run(probe) {
      const releaseAt = new Date(Date.now() + 60_000).toISOString();
      const [reply] = await publishTest(probe, { releaseAt });
      const post = postOf(reply);
      return {
        reply: eventOf(reply) ?? 'none',
        hidden: post['hidden'] === true,
        releaseAt: typeof post['releaseAt'] === 'string',
      };
    },
  },
  {
    id: 'write.upload',
    level: 'MAY',
    title: 'uploadMedia gives an upload URL that takes a PUT, and again',
    writes: true,
    async run(probe) {
      const streamId = writeStream(probe);
      const answer = await rest(probe.target, probe.log, 'POST', `/v1/streams/${encodeURIComponent(streamId)}/post`, {
        body: { content: TEST_TEXT, contentType: 'rawtext', uploadMedia: [{ mimeType: 'image/png' }] },
      });
      if (answer.status === 201) probe.log.postsWritten += 1;
      const urls = (answer.json as { mediaUploadURLs?: { url?: unknown }[] } | undefined)?.mediaUploadURLs;
      const url = Array.isArray(urls) && typeof urls[0]?.url === 'string' ? urls[0].url : undefined;
      const put = async () => {
        if (url === undefined) return 0;
        probe.log.requestsSent += 1;
        // A one-pixel PNG: the smallest image a service takes.
        const png = Buffer.from(
          '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
            '1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
          'hex',
        );
        const response = await fetch(url, {
          method: 'PUT',
          headers: { 'content-type': 'image/png' },
          body: png,
          signal: AbortSignal.timeout(probe.target.timeoutMs),
        });
        await response.arrayBuffer();
        return response.status;
      };
      return { status: answer.status, uploadUrl: url !== undefined, put: await put(), putAgain: await put() };
    },
  },
];
