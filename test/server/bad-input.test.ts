import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import {
  adminState,
  connect,
  connectAs,
  http,
  KEYS,
  publish,
  startTestServer,
  type TestClient,
} from '../support/harness.js';

type KeyName = keyof typeof KEYS;

interface Row {
  name: string;
  /** A string is sent as a text frame as is, a Buffer as a binary frame, an object as JSON with a requestId. */
  frame: string | Buffer | Record<string, unknown>;
  code: string;
  key?: KeyName;
}

const MIB = 1024 * 1024;
const VALID = { streamId: 'macro-wire', content: 'must not be published', contentType: 'rawtext' };

/** An add-stream-post frame; an `undefined` override leaves the argument out. */
function add(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { event: 'add-stream-post', data: { ...VALID, ...overrides } };
}

function sub(data: unknown, event = 'on-stream-post'): Record<string, unknown> {
  return { event, data };
}

const ROWS: Row[] = [
  { name: 'not JSON', frame: '{"event": "add-stream-post", "data": {', code: 'bad-json' },
  { name: 'a binary frame', frame: Buffer.from(JSON.stringify(add())), code: 'bad-request' },
  { name: 'a JSON array', frame: JSON.stringify([add()]), code: 'bad-request' },
  { name: 'a JSON string', frame: '"add-stream-post"', code: 'bad-request' },
  { name: 'JSON null', frame: 'null', code: 'bad-request' },
  { name: 'a missing event', frame: { data: VALID }, code: 'bad-request' },
  { name: 'an event that is a number', frame: { event: 7, data: VALID }, code: 'bad-request' },
  { name: 'an event that is null', frame: { event: null, data: VALID }, code: 'bad-request' },
  { name: 'an unknown command', frame: { event: 'delete-stream-post', data: VALID }, code: 'unknown-command' },
  { name: 'a command in the wrong case', frame: { event: 'Add-Stream-Post', data: VALID }, code: 'unknown-command' },
  { name: 'publish data that is a string', frame: { event: 'add-stream-post', data: 'x' }, code: 'invalid-argument' },
  {
    name: 'publish data that is an array',
    frame: { event: 'add-stream-post', data: [VALID] },
    code: 'invalid-argument',
  },
  { name: 'subscribe data that is a number', frame: sub(5), code: 'invalid-argument' },
  { name: 'streamIds a number', frame: sub({ streamIds: 5 }), code: 'invalid-argument' },
  { name: 'streamIds an array of numbers', frame: sub({ streamIds: [5] }), code: 'invalid-argument' },
  { name: 'lastPosts "x"', frame: sub({ streamIds: 'macro-wire', lastPosts: 'x' }), code: 'invalid-argument' },
  { name: 'lastPosts -1', frame: sub({ streamIds: 'macro-wire', lastPosts: -1 }), code: 'invalid-argument' },
  { name: 'lastPosts 101', frame: sub({ streamIds: 'macro-wire', lastPosts: 101 }), code: 'invalid-argument' },
  { name: 'lastPosts 2.5', frame: sub({ streamIds: 'macro-wire', lastPosts: 2.5 }), code: 'invalid-argument' },
  { name: 'tree lastPosts "101"', frame: sub({ lastPosts: '101' }, 'on-stream-post-tree'), code: 'invalid-argument' },
  { name: 'subscribing to an unknown stream', frame: sub({ streamIds: 'macro-wire,nope' }), code: 'not-found' },
  {
    name: 'subscribing to a stream not followed',
    frame: sub({ streamIds: 'macro-wire,crypto-legal' }),
    code: 'forbidden',
    key: 'bob',
  },
  { name: 'streamId a number', frame: add({ streamId: 5 }), code: 'invalid-argument' },
  { name: 'a missing streamId', frame: add({ streamId: undefined }), code: 'invalid-argument' },
  { name: 'content a number', frame: add({ content: 5 }), code: 'invalid-argument' },
  { name: 'a missing content', frame: add({ content: undefined }), code: 'invalid-argument' },
  { name: 'empty content', frame: add({ content: '' }), code: 'invalid-argument' },
  // 32 Ki + 1 characters, 64 KiB + 2 bytes as UTF-8.
  {
    name: 'content over 64 KiB as UTF-8',
    frame: add({ content: 'é'.repeat(32 * 1024 + 1) }),
    code: 'invalid-argument',
  },
  { name: 'contentType a number', frame: add({ contentType: 5 }), code: 'invalid-argument' },
  { name: 'contentType "html"', frame: add({ contentType: 'html' }), code: 'invalid-argument' },
  { name: 'contentType "Markdown"', frame: add({ contentType: 'Markdown' }), code: 'invalid-argument' },
  { name: 'releaseAt "soon"', frame: add({ releaseAt: 'soon' }), code: 'invalid-argument' },
  { name: 'releaseAt a number', frame: add({ releaseAt: 5 }), code: 'invalid-argument' },
  { name: 'releaseAt on February 30th', frame: add({ releaseAt: '2030-02-30T10:00:00Z' }), code: 'invalid-argument' },
  { name: 'releaseAt in month 13', frame: add({ releaseAt: '2030-13-01T10:00:00Z' }), code: 'invalid-argument' },
  { name: 'customTarget a number', frame: add({ customTarget: 5 }), code: 'invalid-argument' },
  { name: 'idempotencyKey a number', frame: add({ idempotencyKey: 7 }), code: 'invalid-argument' },
  { name: 'idempotencyKey ""', frame: add({ idempotencyKey: '' }), code: 'invalid-argument' },
  {
    name: 'idempotencyKey of 257 characters',
    frame: add({ idempotencyKey: 'k'.repeat(257) }),
    code: 'invalid-argument',
  },
  { name: 'customTarget on a regular stream', frame: add({ customTarget: 'BTC' }), code: 'invalid-argument' },
  {
    name: 'no customTarget on the custom stream',
    frame: add({ streamId: 'whale-alerts' }),
    code: 'invalid-argument',
    key: 'whaleAlerts',
  },
  {
    name: 'a target the custom stream does not offer',
    frame: add({ streamId: 'whale-alerts', customTarget: 'DOGE' }),
    code: 'invalid-argument',
    key: 'whaleAlerts',
  },
  {
    name: 'a target in the wrong case',
    frame: add({ streamId: 'whale-alerts', customTarget: 'btc' }),
    code: 'invalid-argument',
    key: 'whaleAlerts',
  },
  { name: 'publishing to an unknown stream', frame: add({ streamId: 'no-such-stream' }), code: 'not-found' },
  { name: 'publishing with a reader key', frame: add(), code: 'forbidden', key: 'alice' },
  { name: "publishing with another stream's key", frame: add(), code: 'forbidden', key: 'cryptoLegal' },
];

/** Where a connection with this key can publish a marker, if it can publish at all. */
const MARKER_TARGET: Partial<Record<KeyName, Record<string, string>>> = {
  macroWire: { streamId: 'macro-wire' },
  cryptoLegal: { streamId: 'crypto-legal' },
  whaleAlerts: { streamId: 'whale-alerts', customTarget: 'BTC' },
};

function sendRow(client: TestClient, frame: Row['frame'], requestId: string): void {
  if (Buffer.isBuffer(frame)) client.ws.send(frame, { binary: true });
  else if (typeof frame === 'string') client.send(frame);
  else client.send({ ...frame, requestId });
}

/** A command that must succeed on the connection; returns the id of a marker post it (or a helper) published. */
async function followUp(server: StreamPostsServer, client: TestClient, key: KeyName): Promise<string> {
  const target = MARKER_TARGET[key];
  if (target) {
    const ack = await client.request('add-stream-post', { ...target, content: 'marker', contentType: 'rawtext' });
    expect(ack.event).toBe('ack');
    return ack.data.post.id;
  }
  expect((await client.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
  return (await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'marker' })).id;
}

/** A client on another connection that still gets answers. */
async function expectServing(server: StreamPostsServer, other: TestClient): Promise<void> {
  expect((await other.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
  const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'still here' });
  expect((await other.nextEvent('stream.post.created')).data.id).toBe(post.id);
  expect((await http(server, 'GET', '/healthz')).status).toBe(200);
}

describe('bad input on an authenticated connection', () => {
  it.each(ROWS)('$name → $code, changes nothing, keeps the connection', async ({ frame, code, key = 'macroWire' }) => {
    const server = await startTestServer();
    // The owner of every demo stream sees every post, custom targets included.
    const watcher = await connectAs(server, KEYS.newsdesk);
    expect((await watcher.request('on-stream-post', {})).event).toBe('sub_ack');
    const client = await connectAs(server, KEYS[key]);
    const before = await adminState(server);

    const requestId = 'bad-1';
    sendRow(client, frame, requestId);
    // The first reply of any kind, so a wrongly accepted command fails here at once.
    const error = await client.next((m) => m.event !== 'keep-alive');
    expect([error.event, error.data.code]).toEqual(['error', code]);
    expect(error.data.message).toEqual(expect.any(String));
    if (typeof frame === 'object' && !Buffer.isBuffer(frame)) expect(error.requestId).toBe(requestId);
    const after = await adminState(server);
    expect({ posts: after.posts, subscriptions: after.subscriptions }).toEqual({
      posts: before.posts,
      subscriptions: before.subscriptions,
    });

    const markerId = await followUp(server, client, key);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    const firstPost = await watcher.next(
      (m) => m.event === 'stream.post.created' || m.event === 'stream.post.released',
    );
    expect(firstPost.data.id).toBe(markerId);
    expect((await adminState(server)).posts).toBe(before.posts + 1);
  });
});

describe('frames and keys that end the connection', () => {
  it('accepts a frame of exactly 1 MiB (and rejects its content)', async () => {
    const server = await startTestServer();
    const client = await connectAs(server, KEYS.macroWire);
    const empty = JSON.stringify({ ...add({ content: '' }), requestId: 'big' });
    const frame = JSON.stringify({ ...add({ content: 'x'.repeat(MIB - Buffer.byteLength(empty)) }), requestId: 'big' });
    expect(Buffer.byteLength(frame)).toBe(MIB);
    client.send(frame);
    const error = await client.nextEvent('error');
    expect([error.data.code, error.requestId]).toEqual(['invalid-argument', 'big']);
    expect((await client.request('add-stream-post', VALID)).event).toBe('ack');
  });

  it('closes a connection that sends a frame over 1 MiB with 1009 and serves the others', async () => {
    const server = await startTestServer();
    const other = await connectAs(server, KEYS.alice);
    const client = await connectAs(server, KEYS.macroWire);
    const { posts } = await adminState(server);
    client.send(JSON.stringify({ ...add({ content: 'x'.repeat(MIB) }), requestId: 'huge' }));
    expect((await client.closed).code).toBe(1009);
    await expectServing(server, other);
    expect((await adminState(server)).posts).toBe(posts + 1);
  });

  it.each([
    ['no key', {}, 'No secret key provided'],
    ['an unknown key in the header', { key: 'sp_not_a_key' }, 'Invalid secret key'],
    ['an unknown key in the query', { key: 'sp_not_a_key', keyInQuery: true }, 'Invalid secret key'],
    ['an empty key', { key: '' }, 'No secret key provided'],
  ])('answers %s with unauthorized and closes with 4401', async (_name, options, message) => {
    const server = await startTestServer();
    const other = await connectAs(server, KEYS.alice);
    const client = await connect(server, options);
    const error = await client.nextEvent('error');
    expect(error.data).toMatchObject({ code: 'unauthorized', message });
    expect((await client.closed).code).toBe(4401);
    expect(client.messages.map((m) => m.event)).toEqual(['error']);
    await expectServing(server, other);
  });
});
