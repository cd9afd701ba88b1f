import { expect } from 'vitest';
import WebSocket from 'ws';
import {
  startServer,
  type Post,
  type ServerState,
  type StartServerOptions,
  type StreamPostsServer,
} from '../../src/index.js';
import { forEachFile } from './file-hooks.js';
import { RedisServer } from './redis-server.js';
import { TestCluster } from './cluster.js';
import { until } from './poll.js';
import { TestClient, type Message } from './test-client.js';

// The recording client is the harness's too: tests import it from here with the rest.
export { readByServer, TestClient, type Message } from './test-client.js';

/** Demo-seed keys, by role, for tests. */
export const KEYS = {
  alice: 'sp_demo_reader_alice',
  bob: 'sp_demo_reader_bob',
  newsdesk: 'sp_demo_reader_newsdesk',
  cryptoLegal: 'sp_demo_stream_crypto_legal',
  macroWire: 'sp_demo_stream_macro_wire',
  whaleAlerts: 'sp_demo_stream_whale_alerts',
} as const;

/** The demo seed's stream keys by stream id. */
export const STREAM_KEYS: Record<string, string> = {
  'crypto-legal': KEYS.cryptoLegal,
  'macro-wire': KEYS.macroWire,
  'whale-alerts': KEYS.whaleAlerts,
};

const cleanups: (() => Promise<void> | void)[] = [];

/** Where a server listens: all the helpers below need, so they serve the library's server and the core's alike. */
export type ServerAddress = Pick<StreamPostsServer, 'url' | 'httpUrl' | 'port'>;

/**
 * `STREAM_POSTS_TEST_STORE=redis`: every test server keeps its state in this file's own
 * redis-server. `redis3`: every test server is three servers on one keyspace behind one
 * round-robin address (see TestCluster).
 */
export const TEST_STORE =
  (['redis', 'redis3'] as const).find((store) => store === process.env['STREAM_POSTS_TEST_STORE']) ?? 'memory';
/**
 * Several instances serve each test server (redis3). A test that by nature watches one
 * process (its own sockets, one instance's per-key limits) skips itself there with
 * `skip(SEVERAL_INSTANCES, reason)`.
 */
export const SEVERAL_INSTANCES = TEST_STORE === 'redis3';
// The test file's redis-server, started with its first test server and stopped after its last test.
let redis: Promise<RedisServer> | undefined;
let keyspaces = 0;

forEachFile({
  async afterEach() {
    const pending = cleanups.splice(0).reverse();
    for (const cleanup of pending) await cleanup();
  },
  async afterAll() {
    const started = redis;
    redis = undefined;
    await (await started)?.stop();
  },
});

/** A server started the way users start one, on port 0 with the demo seed (unless given), closed after the test. */
export async function startTestServer(options: StartServerOptions = {}): Promise<StreamPostsServer> {
  // A keyspace per server: servers of one test file share nothing, as in memory.
  if (TEST_STORE !== 'memory' && options.store === undefined) redis ??= RedisServer.start();
  const store =
    redis && options.store === undefined ? { store: (await redis).url, redisPrefix: `test${++keyspaces}:` } : {};
  const settings = { port: 0, rateLimit: 0, ...store, ...options };
  // The cluster has the server's whole public surface (ServerHandle); only its private fields differ.
  const server =
    TEST_STORE === 'redis3' && options.store === undefined && options.port === undefined
      ? (TestCluster.start(settings) as Promise<unknown> as Promise<StreamPostsServer>)
      : startServer(settings);
  const started = await server;
  cleanups.push(() => started.close());
  return started;
}

/** Runs `cleanup` after the test, with the connections' own. */
export function afterTest(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

export interface ConnectOptions {
  key?: string;
  /** Send the key as ?apiKey= instead of the x-api-key header. */
  keyInQuery?: boolean;
  /** Path after the base URL, default /v1/ws. */
  path?: string;
  query?: Record<string, string>;
  /**
   * Speak as a client of the hosted service does: without `hello=1`, so the server uses the
   * hosted dialect (PROTOCOL.md B1a). By default the tests ask for ours, as the project's client does.
   */
  hosted?: boolean;
  wsOptions?: WebSocket.ClientOptions;
}

/** Opens a connection and resolves once it is open (not once authenticated). */
export async function connect(server: Pick<ServerAddress, 'url'>, options: ConnectOptions = {}): Promise<TestClient> {
  const url = new URL(`${server.url}${options.path ?? '/v1/ws'}`);
  if (!options.hosted) url.searchParams.set('hello', '1');
  for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
  const headers: Record<string, string> = {};
  if (options.key !== undefined) {
    if (options.keyInQuery) url.searchParams.set('apiKey', options.key);
    else headers['x-api-key'] = options.key;
  }
  return openClient(url, { headers, ...options.wsOptions });
}

/** Opens a connection to this very URL (nothing added to it) and resolves once it is open; closed after the test. */
export async function openClient(url: string | URL, options: WebSocket.ClientOptions = {}): Promise<TestClient> {
  const ws = new WebSocket(url, options);
  const client = new TestClient(ws);
  cleanups.push(async () => {
    if (ws.readyState === WebSocket.CLOSED) return;
    ws.terminate();
    await client.closed;
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return client;
}

/** Connects with a key and waits for `connected`. */
export async function connectAs(
  server: Pick<ServerAddress, 'url'>,
  key: string,
  options: Omit<ConnectOptions, 'key'> = {},
): Promise<TestClient> {
  const client = await connect(server, { ...options, key });
  await client.nextEvent('connected');
  return client;
}

/** Connects with a key and subscribes with `on-stream-post` and these arguments; resolves once the `sub_ack` came. */
export async function subscribeAs(
  server: Pick<ServerAddress, 'url'>,
  key: string,
  args: Record<string, unknown>,
  timeoutMs?: number,
): Promise<TestClient> {
  const client = await connectAs(server, key);
  const reply = await client.request('on-stream-post', args, timeoutMs);
  expect(reply.event, JSON.stringify(reply)).toBe('sub_ack');
  return client;
}

/** Publishes with a stream key over a fresh connection; returns the ack's post. */
export async function publish(
  server: Pick<ServerAddress, 'url'>,
  key: string,
  data: Record<string, unknown>,
): Promise<Post> {
  return (await acknowledged(server, key, data)).post;
}

/**
 * Publishes `content` to a demo stream with that stream's key, over a fresh connection as
 * `publish` does; returns the whole ack (`duplicate` too).
 */
export function publishToStream(
  url: string,
  streamId: string,
  content: string,
  extra: Record<string, unknown> = {},
): Promise<{ post: Post; duplicate: boolean }> {
  return acknowledged({ url }, STREAM_KEYS[streamId]!, { streamId, content, ...extra });
}

async function acknowledged(
  server: Pick<ServerAddress, 'url'>,
  key: string,
  data: Record<string, unknown>,
): Promise<{ post: Post; duplicate: boolean }> {
  const publisher = await connectAs(server, key);
  const reply = await publishOn(publisher, data);
  publisher.close();
  if (reply.event !== 'ack') throw new Error(`publish failed: ${JSON.stringify(reply)}`);
  return reply.data;
}

/** Sends `add-stream-post` on an open connection (rawtext unless `data` says otherwise); resolves with the reply, ack or error. */
export function publishOn(client: TestClient, data: Record<string, unknown>, timeoutMs?: number): Promise<Message> {
  return client.request('add-stream-post', { contentType: 'rawtext', ...data }, timeoutMs);
}

/**
 * Sends every publish on one connection before the first reply comes (pipelined), then
 * waits for all the replies; returns them in the order of `posts`.
 */
export async function publishMany(
  server: Pick<ServerAddress, 'url'>,
  key: string,
  posts: Record<string, unknown>[],
  timeoutMs?: number,
): Promise<Message[]> {
  const publisher = await connectAs(server, key);
  posts.forEach((data, i) =>
    publisher.send({ event: 'add-stream-post', data: { contentType: 'rawtext', ...data }, requestId: `m${i}` }),
  );
  const replies = [];
  for (let i = 0; i < posts.length; i += 1)
    replies.push(await publisher.next((m) => m.requestId === `m${i}`, timeoutMs));
  publisher.close();
  return replies;
}

/** Publishes over REST with a stream key; asserts the 201 and returns the post. */
export async function restPublish(
  server: ServerAddress,
  key: string,
  streamId: string,
  body: Record<string, unknown>,
): Promise<Post> {
  const reply = await http(server, 'POST', `/v1/streams/${streamId}/post`, {
    key,
    body: { contentType: 'rawtext', ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.post as Post;
}

/** Posts of a stream through REST, newest first, as the newsdesk (owner of every demo stream) unless `key` is given. */
export async function restPosts(
  server: Pick<ServerAddress, 'httpUrl'>,
  streamId: string,
  key: string = KEYS.newsdesk,
): Promise<any[]> {
  const reply = await http(server, 'GET', `/v1/streams/${streamId}/posts?limit=100`, { key });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.posts;
}

/** JSON over HTTP against the server's REST origin. */
export async function http(
  server: Pick<ServerAddress, 'httpUrl'>,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  let body: string | Buffer | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${server.httpUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

/** Moves the server clock forward through the admin endpoint. */
export async function advanceClock(server: ServerAddress, advanceMs: number): Promise<void> {
  const reply = await http(server, 'POST', '/_admin/clock', { body: { advanceMs } });
  if (reply.status !== 200) throw new Error(`clock advance failed: ${JSON.stringify(reply.body)}`);
  // One instance moved the clock; the others have seen it once this resolves.
  if (server instanceof TestCluster) await server.sync();
}

/**
 * Reads admin state until `check` accepts it, and returns it: for what the server does
 * asynchronously and says nothing of (a close handled, a tree feed subscribed).
 */
export async function untilAdminState(
  server: Pick<ServerAddress, 'httpUrl'>,
  check: (state: ServerState) => boolean,
): Promise<ServerState> {
  let state: ServerState | undefined;
  await until(async () => check((state = await adminState(server))), 'the admin state');
  return state!;
}

/** `GET /_admin/state`: the service's counts (connections and subscriptions summed over a cluster's instances). */
export async function adminState(server: Pick<ServerAddress, 'httpUrl'>): Promise<ServerState> {
  if (!(server instanceof TestCluster)) return await readAdminState(server);
  // Each instance counts its own connections and subscriptions; the service's are their sum.
  await server.sync();
  const states = await Promise.all(server.instances.map(readAdminState));
  return {
    ...states[0]!,
    connections: states.reduce((sum, state) => sum + state.connections, 0),
    subscriptions: states.reduce((sum, state) => sum + state.subscriptions, 0),
  };
}

/** How many posts the service holds (admin state). */
export async function postCount(server: Pick<ServerAddress, 'httpUrl'>): Promise<number> {
  return (await adminState(server)).posts;
}

async function readAdminState(server: Pick<ServerAddress, 'httpUrl'>): Promise<ServerState> {
  const reply = await http(server, 'GET', '/_admin/state');
  if (reply.status !== 200) throw new Error(`admin state failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as ServerState;
}
