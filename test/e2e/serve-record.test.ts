import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createClient } from 'graphql-ws';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RecordedConnection, RecordedEvent, Recording } from '../../src/protocol/recording.js';
import { client, ensureBuilt, ROOT, runToEnd } from '../support/cli.js';
import { http, openClient, publishOn, type Message } from '../support/harness.js';
import { PNG } from '../support/media.js';
import { until } from '../support/poll.js';
import {
  keyForms,
  recordingSeed,
  savedRecording,
  startRecorder,
  startUpstream,
  stopRecorder,
} from '../support/recording.js';

let tmp: string;
beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-record-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const HOUR = 3_600_000;

/** The JSON frames of one side of a recorded connection. */
function frames(connection: RecordedConnection, from: 'client' | 'server'): any[] {
  return connection.events.flatMap((event) =>
    event.from === from && event.op === 'text' && 'json' in event ? [event.json] : [],
  );
}

function closeOf(connection: RecordedConnection): Extract<RecordedEvent, { op: 'close' }> | undefined {
  return connection.events.find((event): event is Extract<RecordedEvent, { op: 'close' }> => event.op === 'close');
}

function expectNoKey(text: string, keys: Record<string, string>): void {
  for (const [name, key] of Object.entries(keys))
    for (const form of keyForms(key))
      expect(text.includes(form), `${name} written as ${form.slice(0, 12)}…`).toBe(false);
}

describe('serve --record FILE --upstream URL', () => {
  it("records the README's bot shapes against a hosted-dialect serve: every transport, frames both ways, REST with paging and an upload", async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url);

    // A bot on the URL form.
    const urlBot = await openClient(`${recorder.url}/v1/ws/on-stream-post?apiKey=${keys.alice}&streamIds=macro`);
    expect((await urlBot.next()).event).toBe('sub_ack');

    // A /v1/ws client that subscribes, a publisher, and a hidden post released.
    const subscriber = await openClient(`${recorder.url}/v1/ws`, { headers: { 'x-api-key': keys.alice } });
    await subscriber.nextEvent('connected');
    expect((await subscriber.request('on-stream-post', { streamIds: 'macro' })).event).toBe('sub_ack');
    const publisher = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.macro}`);
    await publisher.nextEvent('connected');
    expect((await publishOn(publisher, { streamId: 'macro', content: 'first post' })).event).toBe('ack');
    const releaseAt = new Date(Date.now() + HOUR).toISOString();
    const hidden = await publishOn(publisher, { streamId: 'macro', content: 'hidden until later', releaseAt });
    expect(hidden.event).toBe('ack');
    const isText = (text: string) => (message: Message) => message.data?.text === text;
    await subscriber.next(isText('first post'));
    await urlBot.next(isText('first post'));
    // Moved on the upstream itself: the proxy forwards no admin request.
    expect((await http(upstream, 'POST', '/_admin/clock', { body: { advanceMs: 2 * HOUR } })).status).toBe(200);
    expect((await subscriber.next(isText('hidden until later'))).data).toMatchObject({ hidden: false });

    // A Tree-style client on the tree feed, and a graphql-ws client.
    const tree = await openClient(`${recorder.url}/graphql?format=tree&apiKey=${keys.bob}&lastPosts=2`);
    tree.send(`login ${keys.bob}`);
    await tree.next();
    const graphql = createClient({
      url: `${recorder.url}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { apiKey: keys.bob },
      retryAttempts: 0,
    });
    const result = await new Promise<unknown>((resolve, reject) => {
      const stop = graphql.subscribe(
        { query: 'subscription { streamPostCreated(lastPosts: 1) { text streamId } }' },
        {
          next: (value) => {
            stop();
            resolve(value);
          },
          error: reject,
          complete: () => {},
        },
      );
    });
    expect(result).toEqual({ data: { streamPostCreated: { text: 'hidden until later', streamId: 'macro' } } });
    await graphql.dispose();

    // REST: streams by pages, a stream's posts, a publish with an upload address and the upload.
    const recorderRest = { httpUrl: recorder.httpUrl };
    const first = await http(recorderRest, 'GET', '/v1/streams?limit=1', { key: keys.alice });
    expect(first.status).toBe(200);
    expect(first.body.nextToken).toEqual(expect.any(String));
    const token = String(first.body.nextToken);
    expect(
      (
        await http(recorderRest, 'GET', `/v1/streams?limit=1&nextToken=${encodeURIComponent(token)}`, {
          key: keys.alice,
        })
      ).status,
    ).toBe(200);
    const posts = await http(recorderRest, 'GET', `/v1/streams/macro/posts?apiKey=${keys.alice}`);
    expect(posts.status).toBe(200);
    const published = await http(recorderRest, 'POST', '/v1/streams/macro/post', {
      key: keys.macro,
      body: { content: 'chart attached', contentType: 'rawtext', uploadMedia: [{ mimeType: 'image/png' }] },
    });
    expect(published.status).toBe(201);
    await subscriber.next(isText('chart attached'));
    await tree.next((item) => JSON.stringify(item).includes('chart attached'));
    const uploadUrl = new URL(published.body.mediaUploadURLs[0].url as string);
    const uploaded = await fetch(`${recorder.httpUrl}${uploadUrl.pathname}`, {
      method: 'PUT',
      headers: { 'content-type': 'image/png' },
      body: PNG,
    });
    expect(uploaded.status).toBe(200);

    for (const client of [urlBot, subscriber, publisher, tree]) client.close();
    await Promise.all([urlBot, subscriber, publisher, tree].map((client) => client.closed));
    const { recording, text } = await savedRecording(recorder);

    expect(recording.meta).toMatchObject({
      format: 'stream-posts-recording',
      version: 1,
      upstream: new URL(upstream.url).origin,
      tool: { name: 'stream-posts' },
      dialect: 'hosted',
      truncated: false,
    });
    expect(recording.meta.redactions.map((note) => note.placeholder).sort()).toEqual(
      ['<key-1>', '<key-2>', '<key-3>', '<upload-1>'].sort(),
    );
    const [url, ws, pub, feed, gql] = recording.connections;
    expect(recording.connections.map((connection) => connection.transport)).toEqual([
      'url-form',
      'ws',
      'ws',
      'tree',
      'graphql',
    ]);
    expect(url!.request).toMatchObject({
      path: '/v1/ws/on-stream-post',
      query: [
        ['apiKey', '<key-1>'],
        ['streamIds', 'macro'],
      ],
    });
    expect(frames(url!, 'server')[0].event).toBe('sub_ack');
    expect(ws!.request.headers['x-api-key']).toBe('<key-1>');
    expect(frames(ws!, 'client').map((frame) => frame.event)).toEqual(['on-stream-post']);
    const delivered = frames(ws!, 'server');
    expect(delivered.map((frame) => frame.event).slice(0, 2)).toEqual(['connected', 'sub_ack']);
    expect(delivered.filter((frame) => frame.data?.text !== undefined).map((frame) => frame.data.text)).toEqual([
      'first post',
      'hidden until later',
      'chart attached',
    ]);
    expect(pub!.request.query).toEqual([['apiKey', '<key-2>']]);
    expect(frames(pub!, 'client').map((frame) => frame.data.releaseAt)).toEqual([undefined, releaseAt]);
    for (const connection of recording.connections) {
      const times = connection.events.map((event) => event.t);
      expect(times).toEqual([...times].sort((a, b) => a - b));
    }
    expect(feed!.events.find((event) => event.from === 'client')).toMatchObject({ op: 'text', text: 'login <key-3>' });
    expect(frames(feed!, 'server').length).toBe(3);
    expect(gql!.subprotocol).toBe('graphql-transport-ws');
    expect(frames(gql!, 'client')[0]).toEqual({ type: 'connection_init', payload: { apiKey: '<key-3>' } });
    expect(
      frames(gql!, 'server')
        .map((frame) => frame.type)
        .slice(0, 2),
    ).toEqual(['connection_ack', 'next']);
    expect(closeOf(ws!)).toMatchObject({ from: 'client', code: 1005 });

    const [page1, page2, history, post, put] = recording.requests;
    expect(recording.requests.map((exchange) => `${exchange.method} ${exchange.request.path}`)).toEqual([
      'GET /v1/streams',
      'GET /v1/streams',
      'GET /v1/streams/macro/posts',
      'POST /v1/streams/macro/post',
      'PUT /v1/uploads/<upload-1>',
    ]);
    expect(page1!.request.query).toEqual([['limit', '1']]);
    expect(page2!.request.query).toEqual([
      ['limit', '1'],
      ['nextToken', token],
    ]);
    expect(page1!.response).toMatchObject({ status: 200, body: { json: { nextToken: token } } });
    expect(history!.request.query).toEqual([['apiKey', '<key-1>']]);
    expect((history!.response.body as { json: { posts: unknown[] } }).json.posts.length).toBeGreaterThan(0);
    expect(post!.request.body).toEqual({
      json: { content: 'chart attached', contentType: 'rawtext', uploadMedia: [{ mimeType: 'image/png' }] },
    });
    expect((post!.response.body as any).json.mediaUploadURLs[0].url).toBe(
      `${new URL(upstream.httpUrl).origin}/v1/uploads/<upload-1>`,
    );
    expect(put!.request.body).toEqual({ base64: PNG.toString('base64') });
    expect(put!.response.status).toBe(200);
    expectNoKey(text, { ...keys, upload: uploadUrl.pathname.split('/').pop()! });
  });

  it('keeps every key out of the file, wherever a client put it and however the service echoed it', async () => {
    const { seed, keys } = recordingSeed();
    const secrets = { ...keys, stranger: randomUUID(), inPath: randomUUID(), admin: randomUUID() };
    const upstream = await startUpstream(tmp, seed, ['--admin-token', secrets.admin]);
    const recorder = await startRecorder(tmp, upstream.url);

    // In the query, and echoed back plain, percent-encoded and as JSON \u escapes: a service
    // quoting the key this connection presented.
    const echo = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.alice}`);
    await echo.nextEvent('connected');
    const hex = (key: string) => [...Buffer.from(key)].map((byte) => byte.toString(16).padStart(2, '0'));
    const echoed = [
      `plain ${keys.alice}`,
      hex(keys.alice)
        .map((byte) => `%${byte}`)
        .join(''),
      hex(keys.alice)
        .map((byte) => `\\u00${byte}`)
        .join(''),
    ];
    for (const requestId of echoed) {
      echo.send({ event: 'no-such-command', data: {}, requestId });
      expect((await echo.next((message) => message.requestId === requestId)).event).toBe('error');
    }
    // In x-api-key, in Authorization, in graphql-ws connectionParams, in `login KEY`, in the URL form's path.
    const header = await openClient(`${recorder.url}/v1/ws`, { headers: { 'x-api-key': keys.bob } });
    await header.nextEvent('connected');
    const bearer = await http({ httpUrl: recorder.httpUrl }, 'GET', '/v1/streams', {
      headers: { authorization: `Bearer ${secrets.stranger}` },
    });
    expect(bearer.status).toBe(401);
    const graphql = createClient({
      url: `${recorder.url}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { apiKey: keys.macro },
      retryAttempts: 0,
      lazy: false,
    });
    await new Promise<void>((resolve) => graphql.on('connected', () => resolve()));
    await graphql.dispose();
    const tree = await openClient(`${recorder.url}/v1/ws/on-stream-post-tree?apiKey=${keys.alice}`);
    tree.send(`login ${keys.alice}`);
    const refused = new WebSocket(`${recorder.url}/v1/ws/${secrets.inPath}`);
    refused.on('error', () => {});
    const status = await new Promise<number>((resolve) =>
      refused.once('unexpected-response', (_req, res) => resolve(res.statusCode!)),
    );
    expect(status).toBe(404);
    refused.terminate();
    // An admin request is answered here and never forwarded: the upstream would take this token.
    const admin = await http({ httpUrl: recorder.httpUrl }, 'GET', '/_admin/state', {
      headers: { authorization: `Bearer ${secrets.admin}` },
    });
    expect(admin.status).toBe(404);
    expect(admin.body.error.message).toMatch(/never forwards \/_admin/);
    expect(
      (await http(upstream, 'GET', '/_admin/state', { headers: { authorization: `Bearer ${secrets.admin}` } })).status,
    ).toBe(200);
    for (const client of [echo, header, tree]) client.close();
    await Promise.all([echo, header, tree].map((client) => client.closed));

    const { recording, text } = await savedRecording(recorder);
    expectNoKey(text, secrets);
    const [echoConnection, headerConnection, graphqlConnection, treeConnection, pathConnection] = recording.connections;
    expect(echoConnection!.request.query).toEqual([['apiKey', '<key-1>']]);
    const replies = frames(echoConnection!, 'server').filter((frame) => frame.event === 'error');
    expect(replies.map((frame) => frame.requestId)).toEqual(['plain <key-1>', '<key-1>', '<key-1>']);
    expect(headerConnection!.request.headers['x-api-key']).toBe('<key-2>');
    expect(frames(graphqlConnection!, 'client')[0]).toEqual({
      type: 'connection_init',
      payload: { apiKey: '<key-4>' },
    });
    expect(treeConnection!.events.find((event) => event.from === 'client')).toMatchObject({ text: 'login <key-1>' });
    expect(pathConnection!.request.path).toBe('/v1/ws/<key-5>');
    expect(pathConnection!.refused?.status).toBe(404);
    expect(recording.requests.map((exchange) => exchange.request.headers['authorization'])).toEqual(['Bearer <key-3>']);
    expect(recording.meta.redactions.filter((note) => note.kind === 'api-key').map((note) => note.placeholder)).toEqual(
      ['<key-1>', '<key-2>', '<key-3>', '<key-4>', '<key-5>'],
    );
  });

  it('refuses to save a secret it learned too late to replace, naming the place, and writes nothing', async () => {
    // A stream named with bob's key reaches the file before bob presents it.
    const { seed, keys } = recordingSeed(true);
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url);
    const listing = await http({ httpUrl: recorder.httpUrl }, 'GET', '/v1/streams', { key: keys.alice });
    const planted = (listing.body.streams as { id: string }[]).findIndex((stream) => stream.id === 'planted');
    expect(planted).toBeGreaterThanOrEqual(0);
    const bob = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.bob}`);
    await bob.nextEvent('connected');
    bob.close();

    const { exit, text } = await stopRecorder(recorder);
    expect(exit.code).toBe(1);
    expect(text).toBeUndefined();
    const stderr = recorder.cli.stderr;
    expect(stderr).toContain(`$.requests[0].response.body.json.streams[${planted}].name holds the secret <key-2>`);
    expect(stderr).toMatch(/nothing was written/);
    expect(stderr.includes(keys.bob)).toBe(false);
    expect((await readdir(tmp)).filter((name) => name.startsWith(basename(recorder.file)))).toEqual([]);
  });

  it('stops recording at --record-max with one warning while every frame still passes', async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url, ['--record-max', '4096']);
    const subscriber = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.alice}`);
    await subscriber.nextEvent('connected');
    expect((await subscriber.request('on-stream-post', { streamIds: 'macro' })).event).toBe('sub_ack');
    const publisher = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.macro}`);
    await publisher.nextEvent('connected');
    const texts = Array.from({ length: 30 }, (_, index) => `post ${index} ${'x'.repeat(200)}`);
    for (const content of texts) expect((await publishOn(publisher, { streamId: 'macro', content })).event).toBe('ack');
    for (const content of texts) await subscriber.next((message) => message.data?.text === content);
    subscriber.close();
    publisher.close();

    const { recording } = await savedRecording(recorder);
    expect(recording.meta.truncated).toBe(true);
    const recorded = frames(recording.connections[0]!, 'server').filter((frame) => frame.data?.text !== undefined);
    expect(recorded.length).toBeLessThan(texts.length);
    expect(recorder.cli.stderr.match(/recording stopped/g)).toHaveLength(1);
  });

  it("passes the upstream's refusals on as they were sent, and records them", async () => {
    const { seed } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url);
    const stranger = await openClient(`${recorder.url}/v1/ws?apiKey=${randomUUID()}`);
    expect((await stranger.next()).data).toMatchObject({ code: 'unauthorized', message: 'Invalid secret key' });
    expect(await stranger.closed).toEqual({ code: 4401, reason: 'unauthorized' });
    const refusal = async (base: string) => {
      const ws = new WebSocket(`${base}/v1/ws/no-such-command`);
      ws.on('error', () => {});
      return new Promise<{ status: number; body: string }>((resolve) =>
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        }),
      );
    };
    const direct = await refusal(upstream.url);
    expect(await refusal(recorder.url)).toEqual(direct);

    const { recording } = await savedRecording(recorder);
    const [refusedKey, refusedPath] = recording.connections;
    expect(frames(refusedKey!, 'server')[0].data.message).toBe('Invalid secret key');
    expect(closeOf(refusedKey!)).toMatchObject({ from: 'server', code: 4401, reason: 'unauthorized' });
    expect(refusedPath!.refused).toMatchObject({ status: direct.status });
    expect(refusedPath!.events).toEqual([]);
  });

  it('passes on an upstream that goes away mid-session, and records the close', async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url);
    const subscriber = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.alice}`);
    await subscriber.nextEvent('connected');
    upstream.cli.child.kill('SIGKILL');
    expect((await subscriber.closed).code).toBe(1006);

    const { recording } = await savedRecording(recorder);
    expect(closeOf(recording.connections[0]!)).toMatchObject({ from: 'server', code: 1006 });
  });

  it('replaces --record-redact fields, shows proxied frames with --trace, and saves when the --exec command ends', async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    // A bot of our dialect (hello=1), reading where --exec says serve is.
    const bot = join(tmp, 'bot.mjs');
    await writeFile(
      bot,
      `import WebSocket from ${JSON.stringify(join(ROOT, 'node_modules/ws/index.js'))};
const key = process.argv[2];
const ws = new WebSocket(process.env.STREAM_POSTS_URL + '/v1/ws?hello=1', { headers: { 'x-api-key': key } });
ws.on('message', async (data) => {
  const message = JSON.parse(String(data));
  if (message.event === 'connected') ws.send(JSON.stringify({ event: 'on-stream-post', requestId: 'r1', data: { lastPosts: 1 } }));
  if (message.event !== 'sub_ack') return;
  const reply = await fetch(process.env.STREAM_POSTS_HTTP_URL + '/v1/streams', { headers: { 'x-api-key': key } });
  await reply.text();
  ws.close(1000, 'done');
});
ws.on('close', () => process.exit(0));
`,
    );
    const file = join(tmp, 'exec-recording.json');
    const serve = client([
      'serve',
      '--port',
      '0',
      '--record',
      file,
      '--upstream',
      upstream.url,
      '--trace',
      '--record-redact',
      '$..userId',
      '--record-redact',
      '$.requests[*].response.body.json.streams[*].name',
      '--exec',
      `node ${bot} ${keys.alice}`,
    ]);
    expect((await serve.exit()).code).toBe(0);
    const recording = JSON.parse(await readFile(file, 'utf8')) as Recording;
    expect(recording.meta.dialect).toBe('stream-posts');
    const [connection] = recording.connections;
    expect(frames(connection!, 'server')[0].data.userId).toBe('<redacted>');
    expect(closeOf(connection!)).toMatchObject({ from: 'client', code: 1000, reason: 'done' });
    const names = (recording.requests[0]!.response.body as any).json.streams.map(
      (stream: { name: string }) => stream.name,
    );
    expect(names).toEqual(['<redacted>', '<redacted>']);
    expect(recording.meta.redactions.filter((note) => note.kind === 'field')).toEqual([
      { kind: 'field', placeholder: '<redacted>', count: 1, path: '$..userId' },
      { kind: 'field', placeholder: '<redacted>', count: 2, path: '$.requests[*].response.body.json.streams[*].name' },
    ]);
    // The trace shows the frames both ways and the REST exchange, the key as its placeholder.
    expect(serve.stderr).toMatch(/> #1 UPGRADE \/v1\/ws\?hello=1/);
    expect(serve.stderr).toMatch(/< #1 \{"event":"connected"/);
    expect(serve.stderr).toMatch(/> #1 \{"event":"on-stream-post"/);
    expect(serve.stderr).toMatch(/> #2 GET \/v1\/streams/);
    expect(serve.stderr).toMatch(/< #2 200 GET \/v1\/streams/);
    expectNoKey(serve.stderr, { ...keys });
  });

  it.each([
    [['--upstream', 'ws://127.0.0.1:9'], /--upstream needs --record FILE/],
    [['--record', 'r.json'], /--record needs --upstream URL/],
    [
      ['--record', 'r.json', '--upstream', 'ws://127.0.0.1:9/?apiKey=abcdefgh'],
      /--upstream: upstream is an origin only/,
    ],
    [['--record', 'r.json', '--upstream', 'ftp://127.0.0.1:9'], /--upstream: upstream must be ws:\/\/, wss:\/\//],
    [
      ['--record', 'r.json', '--upstream', 'ws://127.0.0.1:9', '--record-redact', '$..a[?(@.b)]'],
      /--record-redact: .*filters and slices are not supported/,
    ],
    [
      ['--record', 'r.json', '--upstream', 'ws://127.0.0.1:9', '--seed', 'seed.json'],
      /--seed cannot be combined with --record/,
    ],
    [
      ['--record', '/no/such/folder/r.json', '--upstream', 'ws://127.0.0.1:9'],
      /--record: record must be a file in a folder this process can write to/,
    ],
  ])('refuses serve %j with exit 2, naming what was wrong', async (args, message) => {
    const { code, stderr } = await runToEnd(['serve', '--port', '0', ...args], { cwd: tmp });
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('drops a bot that stops reading with 1013 (--max-buffered) while the others get every post', async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed, ['--rate-limit', '0']);
    const recorder = await startRecorder(tmp, upstream.url, ['--max-buffered', '64KiB']);
    const stalled = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.alice}`);
    await stalled.nextEvent('connected');
    expect((await stalled.request('on-stream-post', { streamIds: 'macro' })).event).toBe('sub_ack');
    const reader = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.bob}`);
    await reader.nextEvent('connected');
    expect((await reader.request('on-stream-post', { streamIds: 'macro' })).event).toBe('sub_ack');
    // Stops reading: what the proxy writes to it piles up in the kernel, then in the proxy.
    stalled.ws.pause();
    const publisher = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.macro}`);
    await publisher.nextEvent('connected');
    const content = 'x'.repeat(16 * 1024);
    let published = 0;
    const dropped = recorder.cli.waitFor(
      (out) => /a side stopped reading/.test(out.stderr),
      'the slow bot dropped',
      60_000,
    );
    let done = false;
    void dropped.then(() => (done = true));
    while (!done && published < 4000) {
      expect((await publishOn(publisher, { streamId: 'macro', content: `${published} ${content}` })).event).toBe('ack');
      published += 1;
    }
    await dropped;
    await reader.next((message) => message.data?.text?.startsWith(`${published - 1} `));
    stalled.ws.resume();
    // The close frame waits behind what it did not read; past serve's grace the socket is cut.
    expect([1013, 1006]).toContain((await stalled.closed).code);
    for (const client of [reader, publisher]) client.close();
    await Promise.all([reader, publisher].map((client) => client.closed));

    const { recording } = await savedRecording(recorder);
    expect(closeOf(recording.connections[0]!)).toMatchObject({ from: 'server', code: 1013, reason: 'slow consumer' });
    const texts = frames(recording.connections[1]!, 'server').filter((frame) => frame.data?.text !== undefined);
    expect(texts).toHaveLength(published);
  });

  it('refuses a connection or request past --record-max-connections with 503, and takes one again once one ends', async () => {
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed);
    const recorder = await startRecorder(tmp, upstream.url, ['--record-max-connections', '1']);
    const first = await openClient(`${recorder.url}/v1/ws?apiKey=${keys.alice}`);
    await first.nextEvent('connected');
    const second = new WebSocket(`${recorder.url}/v1/ws?apiKey=${keys.bob}`);
    second.on('error', () => {});
    const status = await new Promise<number>((resolve) =>
      second.once('unexpected-response', (_req, res) => resolve(res.statusCode!)),
    );
    expect(status).toBe(503);
    const rest = await http({ httpUrl: recorder.httpUrl }, 'GET', '/v1/streams', { key: keys.alice });
    expect(rest.status).toBe(503);
    expect(rest.body.error).toMatchObject({ code: 'limit-exceeded' });
    first.close();
    await first.closed;
    await until(
      async () => (await http({ httpUrl: recorder.httpUrl }, 'GET', '/v1/streams', { key: keys.alice })).status === 200,
      'the proxy to take a request again',
    );

    const { recording } = await savedRecording(recorder);
    // What was refused here never reached the upstream, and is not in the recording.
    expect(recording.connections).toHaveLength(1);
    expect(recording.requests.every((exchange) => exchange.response.status === 200)).toBe(true);
  });

  it('records a wss:// upstream, itself serving wss:// with --tls-cert and --tls-key', async () => {
    const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    const cert = join(tmp, 'tls-cert.pem');
    const key = join(tmp, 'tls-key.pem');
    await writeFile(cert, pems.cert);
    await writeFile(key, pems.private);
    const { seed, keys } = recordingSeed();
    const upstream = await startUpstream(tmp, seed, ['--tls-cert', cert, '--tls-key', key]);
    expect(upstream.url).toMatch(/^wss:\/\//);
    const file = join(tmp, 'tls-recording.json');
    // The upstream's certificate is trusted as a public service's would be.
    const cli = client(
      ['serve', '--port', '0', '--record', file, '--upstream', upstream.url, '--tls-cert', cert, '--tls-key', key],
      { env: { NODE_EXTRA_CA_CERTS: cert } },
    );
    const url = await cli.url();
    expect(url).toMatch(/^wss:\/\//);
    const alice = await openClient(`${url}/v1/ws?apiKey=${keys.alice}`, { rejectUnauthorized: false });
    await alice.nextEvent('connected');
    alice.close();
    await alice.closed;
    const { recording } = await savedRecording({ cli, url, httpUrl: url.replace(/^wss/, 'https'), file });
    expect(recording.meta.upstream).toBe(new URL(upstream.url).origin);
    expect(frames(recording.connections[0]!, 'server')[0].event).toBe('connected');
  });
});
