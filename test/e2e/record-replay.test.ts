import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ensureBuilt } from '../support/cli.js';
import { http, openClient, publishOn, type Message } from '../support/harness.js';
import { PNG } from '../support/media.js';
import { recordingSeed, savedRecording, startRecorder, startUpstream, type SeedKeys } from '../support/recording.js';
import { startServe, type Serve } from '../support/serve.js';

let tmp: string;
beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-record-replay-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const HOUR = 3_600_000;

/** What each of the README's bot shapes saw of one session, in the order it saw it. */
interface Seen {
  urlBot: Message[];
  subscriber: Message[];
  publisher: Message[];
  tree: Message[];
  graphql: unknown[];
  rest: { status: number; body: unknown }[];
}

/**
 * One session of the README's bot shapes against `at` (a recorder in front of a service, or a
 * replay): a URL-form bot, a `/v1/ws` subscriber and a publisher whose hidden post is
 * released (`release` moves the service's clock), a tree client, a graphql-ws client, REST
 * pages, a stream's posts, a publish with an upload address and the upload.
 */
async function session(
  at: Pick<Serve, 'url' | 'httpUrl'>,
  keys: SeedKeys,
  release: () => Promise<void>,
): Promise<Seen> {
  const isText = (text: string) => (message: Message) => message.data?.text === text;
  const urlBot = await openClient(`${at.url}/v1/ws/on-stream-post?apiKey=${keys.alice}&streamIds=macro`);
  await urlBot.nextEvent('sub_ack');
  const subscriber = await openClient(`${at.url}/v1/ws`, { headers: { 'x-api-key': keys.alice } });
  await subscriber.nextEvent('connected');
  await subscriber.request('on-stream-post', { streamIds: 'macro' });
  const publisher = await openClient(`${at.url}/v1/ws?apiKey=${keys.macro}`);
  await publisher.nextEvent('connected');
  await publishOn(publisher, { streamId: 'macro', content: 'first post' });
  await publishOn(publisher, {
    streamId: 'macro',
    content: 'hidden until later',
    releaseAt: new Date(Date.now() + HOUR).toISOString(),
  });
  await subscriber.next(isText('first post'));
  await urlBot.next(isText('first post'));
  await release();
  await subscriber.next(isText('hidden until later'));

  const tree = await openClient(`${at.url}/graphql?format=tree&apiKey=${keys.bob}&lastPosts=2`);
  tree.send(`login ${keys.bob}`);
  await tree.next();
  const graphql = createClient({
    url: `${at.url}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { apiKey: keys.bob },
    retryAttempts: 0,
  });
  const graphqlSeen = await new Promise<unknown[]>((resolve, reject) => {
    const stop = graphql.subscribe(
      { query: 'subscription { streamPostCreated(lastPosts: 1) { text streamId createdAt } }' },
      {
        next: (value) => {
          stop();
          resolve([value]);
        },
        error: reject,
        complete: () => {},
      },
    );
  });
  await graphql.dispose();

  const rest: Seen['rest'] = [];
  const keep = <T extends { status: number; body: unknown }>(response: T): T => {
    rest.push({ status: response.status, body: response.body });
    return response;
  };
  const first = keep(await http(at, 'GET', '/v1/streams?limit=1', { key: keys.alice }));
  const token = encodeURIComponent(String(first.body.nextToken));
  keep(await http(at, 'GET', `/v1/streams?limit=1&nextToken=${token}`, { key: keys.alice }));
  keep(await http(at, 'GET', `/v1/streams/macro/posts?apiKey=${keys.alice}`));
  const published = keep(
    await http(at, 'POST', '/v1/streams/macro/post', {
      key: keys.macro,
      body: { content: 'chart attached', contentType: 'rawtext', uploadMedia: [{ mimeType: 'image/png' }] },
    }),
  );
  await subscriber.next(isText('chart attached'));
  await tree.next((item) => JSON.stringify(item).includes('chart attached'));
  // The upload goes where the answer points, through the address the bot was given.
  const upload = new URL(published.body.mediaUploadURLs[0].url as string);
  const uploaded = await fetch(`${at.httpUrl}${upload.pathname}`, {
    method: 'PUT',
    headers: { 'content-type': 'image/png' },
    body: PNG,
  });
  rest.push({ status: uploaded.status, body: await uploaded.text() });

  const clients = [urlBot, subscriber, publisher, tree];
  for (const client of clients) client.close();
  await Promise.all(clients.map((client) => client.closed));
  return {
    urlBot: urlBot.messages,
    subscriber: subscriber.messages,
    publisher: publisher.messages,
    tree: tree.messages,
    graphql: graphqlSeen,
    rest,
  };
}

const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * What a session saw, as the replay documents it is changed: every date-time moved by
 * `shiftMs`, the service's address and an upload address's token written alike, the
 * requestIds of the bot's own requests (random on each run) left out.
 */
function normalized(seen: Seen, origins: string[], shiftMs: number): unknown {
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (DATE_TIME.test(value)) return new Date(Date.parse(value) - shiftMs).toISOString();
      let text = value;
      for (const origin of origins) text = text.replaceAll(origin, 'ORIGIN');
      return text.replace(/\/uploads\/[^/?"]+/, '/uploads/TOKEN');
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(
        Object.entries(value)
          .filter(([name]) => name !== 'requestId')
          .map(([name, item]) => [name, walk(item)]),
      );
    return value;
  };
  return walk(seen);
}

/** The first date-time a session saw (the subscriber's `connected` carries the service's time). */
function firstTime(seen: Seen): number {
  const text = JSON.stringify(seen.subscriber).match(/"(\d{4}-\d\d-\d\dT[^"]+Z)"/)![1]!;
  return Date.parse(text);
}

async function stop(serve: Serve): Promise<void> {
  serve.cli.child.kill('SIGTERM');
  await serve.cli.exit();
}

describe('serve --record, then serve --replay with the upstream gone', () => {
  it("gives each of the README's bot shapes the same frames in the same order, at max speed and at the recorded speed", async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url);
    const recorded = await session(recorder, keys, async () => {
      // Moved on the upstream itself: the proxy forwards no admin request.
      expect((await http(upstream, 'POST', '/_admin/clock', { body: { advanceMs: 2 * HOUR } })).status).toBe(200);
    });
    const { recording } = await savedRecording(recorder);
    await stop(upstream);
    expect(recording.connections).toHaveLength(5);
    expect(recorded.subscriber.filter((m) => m.data?.text).map((m) => m.data.text)).toEqual([
      'first post',
      'hidden until later',
      'chart attached',
    ]);

    // Other keys than at recording: the bot's own test keys stand for the placeholders.
    const replayKeys: SeedKeys = { alice: randomUUID(), bob: randomUUID(), macro: randomUUID() };
    for (const speed of ['max', 'recorded']) {
      const before = Date.now();
      const replay = await startServe(['--replay', recorder.file, '--replay-speed', speed]);
      const replayed = await session(replay, replayKeys, async () => {
        await http(replay, 'POST', '/_admin/clock', { body: { advanceMs: 2 * HOUR } });
      });
      const origins = [new URL(upstream.httpUrl).origin, new URL(upstream.url).origin];
      const replayOrigins = [new URL(replay.httpUrl).origin, new URL(replay.url).origin];
      // Shifted so that the recording's start is the replay's: the service's time is this run's, not the recording's.
      expect(firstTime(replayed)).toBeGreaterThanOrEqual(before);
      const shift = firstTime(replayed) - firstTime(recorded);
      expect(normalized(replayed, replayOrigins, shift), `at ${speed} speed`).toEqual(normalized(recorded, origins, 0));
      await stop(replay);
    }
  });
});
