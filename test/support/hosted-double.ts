import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A double of the hosted Stream Posts service's plainer dialect (PROTOCOL.md B1a, B2, B3,
 * B6), written from what it is known to send, for testing the client against it: no
 * `connected` on the URL form, and on the bare `/v1/ws` one whose data holds only
 * `message`; `sub_ack` without `history` and without the requestId echoed; posts with
 * `id`, `streamId`, `text`, `createdAt` (and `contentType`) only, no `streamName`;
 * `keep-alive` envelopes; the REST reference's paged lists. It ignores `hello=1`, and counts
 * what tests assert on: subscribe commands per connection, lookups of each stream.
 */

export const HOSTED_KEYS = { reader: 'hosted_reader_key_1', streamA: 'hosted_stream_key_a' } as const;

export interface HostedStream {
  id: string;
  name: string;
  description: string;
  customTargets: string[];
  isFeatured: boolean;
}

export const HOSTED_STREAMS: readonly HostedStream[] = [
  {
    id: '01J366WJBXF6BN036SXVNRAP8A',
    name: 'Macro Desk',
    description: 'Rates and prints',
    customTargets: [],
    isFeatured: true,
  },
  {
    id: '01J366WJBXF6BN036SXVNRAP8B',
    name: 'Crypto Legal Updates',
    description: '',
    customTargets: [],
    isFeatured: false,
  },
  {
    id: '01J366WJBXF6BN036SXVNRAP8C',
    name: 'Whale Watch',
    description: 'Large moves',
    customTargets: ['BTC', 'ETH', 'SOL'],
    isFeatured: false,
  },
  {
    id: '01J366WJBXF6BN036SXVNRAP8D',
    name: 'Weather',
    description: 'Not followed',
    customTargets: [],
    isFeatured: false,
  },
];
const [STREAM_A, STREAM_B, STREAM_C] = HOSTED_STREAMS.map((stream) => stream.id) as [string, string, string];
/** The reader follows the first three; the stream key is stream A's. */
const FOLLOWED = [STREAM_A, STREAM_B, STREAM_C];

/** A post as the hosted service sends it. */
export interface HostedPost {
  id: string;
  streamId: string;
  text: string;
  createdAt: string;
  contentType?: string;
}

interface Subscriber {
  ws: WebSocket;
  tree: boolean;
  streamIds: string[];
}

const PAGE = 2;

export interface HostedDouble {
  url: string;
  httpUrl: string;
  /** Subscribe commands (frames or URL forms) of each connection, in connection order. */
  subscribes: number[];
  /** `GET /v1/streams/{id}` requests per stream id. */
  lookups: Map<string, number>;
  /** The selection `POST …/custom-targets` set, per stream. */
  selected: Map<string, string[]>;
  /** Publishes a post now, as the service would for a publisher: live to every subscriber of its stream. */
  publish(streamId: string, text: string): HostedPost;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const refusal = (res: ServerResponse, status: number, code: string, message: string) =>
  send(res, status, { error: { code, message } });

function keyOf(request: IncomingMessage, url: URL): string | undefined {
  const header = request.headers['x-api-key'];
  return (typeof header === 'string' ? header : undefined) ?? url.searchParams.get('apiKey') ?? undefined;
}

const known = (key: string | undefined) => key === HOSTED_KEYS.reader || key === HOSTED_KEYS.streamA;

function page<T>(items: readonly T[], url: URL): { slice: T[]; nextToken?: string } {
  const offset = Number(url.searchParams.get('nextToken') ?? url.searchParams.get('cursor') ?? '0');
  const limit = Math.min(Number(url.searchParams.get('limit') ?? '10'), PAGE);
  const slice = items.slice(offset, offset + limit);
  return offset + limit < items.length ? { slice, nextToken: String(offset + limit) } : { slice };
}

/** Starts the double on a free port with three history posts on each followed stream (created in 2025). */
export async function startHostedDouble(): Promise<HostedDouble> {
  let sequence = 0;
  const nextId = () => `01HOSTED${String(++sequence).padStart(18, '0')}`;
  const posts: HostedPost[] = [];
  for (const streamId of FOLLOWED) {
    for (let i = 1; i <= 3; i++) {
      posts.push({
        id: nextId(),
        streamId,
        text: `history ${i} of ${streamId.slice(-1)}`,
        createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
      });
    }
  }
  const subscribers = new Set<Subscriber>();
  const subscribes: number[] = [];
  const lookups = new Map<string, number>();
  const selected = new Map<string, string[]>([[STREAM_C, ['BTC']]]);

  const envelope = (post: HostedPost) => JSON.stringify({ event: 'stream.post.created', data: post });
  const treeItem = (post: HostedPost) => {
    const name = HOSTED_STREAMS.find((stream) => stream.id === post.streamId)?.name ?? post.streamId;
    return JSON.stringify({ _id: post.id, title: name, en: post.text, time: Date.parse(post.createdAt) });
  };

  function publish(streamId: string, text: string): HostedPost {
    const post: HostedPost = {
      id: nextId(),
      streamId,
      text,
      createdAt: new Date().toISOString(),
      contentType: 'rawtext',
    };
    posts.push(post);
    for (const subscriber of subscribers) {
      if (subscriber.streamIds.includes(streamId))
        subscriber.ws.send(subscriber.tree ? treeItem(post) : envelope(post));
    }
    return post;
  }

  function subscribe(ws: WebSocket, connection: number, command: string, args: Record<string, unknown>): void {
    subscribes[connection] = (subscribes[connection] ?? 0) + 1;
    const named = typeof args['streamIds'] === 'string' ? args['streamIds'].split(',').map((id) => id.trim()) : [];
    const streamIds = named.filter((id) => id !== '').length > 0 ? named.filter((id) => id !== '') : FOLLOWED;
    const lastPosts = Number(args['lastPosts'] ?? 0);
    const tree = command === 'on-stream-post-tree';
    ws.send(JSON.stringify({ event: 'sub_ack', data: { command, streamIds, lastPosts } }));
    for (const streamId of streamIds) {
      const recent = posts.filter((post) => post.streamId === streamId).slice(-lastPosts || posts.length);
      for (const post of lastPosts > 0 ? recent : []) ws.send(tree ? treeItem(post) : envelope(post));
    }
    ws.send(JSON.stringify({ event: 'keep-alive', data: {} }));
    subscribers.add({ ws, tree, streamIds });
  }

  function command(ws: WebSocket, connection: number, event: string, data: Record<string, unknown>): void {
    if (event === 'on-stream-post' || event === 'on-stream-post-tree') return subscribe(ws, connection, event, data);
    if (event === 'add-stream-post') {
      const post = publish(String(data['streamId']), String(data['content']));
      ws.send(JSON.stringify({ event: 'ack', data: { post, duplicate: false } }));
      return;
    }
    ws.send(JSON.stringify({ event: 'error', data: { code: 'unknown-command', message: `unknown command ${event}` } }));
  }

  async function rest(request: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (!known(keyOf(request, url))) return refusal(res, 401, 'unauthorized', 'Invalid secret key');
    const parts = url.pathname.split('/').filter((part) => part !== '');
    // ['v1', 'streams', id?, tail?]
    if (parts[0] !== 'v1' || parts[1] !== 'streams') return refusal(res, 404, 'not-found', 'no such path');
    const streamId = parts[2];
    const stream = HOSTED_STREAMS.find((each) => each.id === streamId);
    const restStream = (each: HostedStream) => ({
      ...each,
      customTargetsData: {},
      label: '',
      paidStreamData: {},
      packageOnly: false,
    });
    if (streamId === undefined) {
      const { slice, nextToken } = page(HOSTED_STREAMS, url);
      return send(res, 200, { streams: slice.map(restStream), ...(nextToken ? { nextToken } : {}) });
    }
    if (!stream) return refusal(res, 404, 'not-found', `no stream ${streamId}`);
    const tail = parts[3];
    if (tail === undefined && request.method === 'GET') {
      lookups.set(stream.id, (lookups.get(stream.id) ?? 0) + 1);
      const selection = stream.customTargets.length > 0 ? { selectedTargets: selected.get(stream.id) ?? [] } : {};
      return send(res, 200, { ...restStream(stream), ...selection });
    }
    if (tail === 'posts' && request.method === 'GET') {
      const newest = posts.filter((post) => post.streamId === stream.id).reverse();
      const { slice, nextToken } = page(newest, url);
      return send(res, 200, { posts: slice, ...(nextToken ? { cursor: nextToken } : {}) });
    }
    const body = await new Promise<Record<string, unknown>>((resolve) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString()));
      request.on('end', () => resolve(JSON.parse(text || '{}') as Record<string, unknown>));
    });
    if (tail === 'custom-targets' && request.method === 'POST') {
      if (stream.customTargets.length === 0)
        return refusal(res, 400, 'invalid-argument', `stream ${stream.id} is not a custom stream`);
      const targets = body['customTargets'];
      if (!Array.isArray(targets) || !targets.every((target) => typeof target === 'string'))
        return refusal(res, 400, 'invalid-argument', 'customTargets must be an array of strings');
      const wrong = targets.find((target) => !stream.customTargets.includes(target));
      if (wrong !== undefined) return refusal(res, 400, 'invalid-argument', `${wrong} is not a target of ${stream.id}`);
      selected.set(stream.id, targets);
      return send(res, 200, { customTargets: targets });
    }
    if (tail === 'post' && request.method === 'POST') {
      return send(res, 201, { post: publish(stream.id, String(body['content'])) });
    }
    return refusal(res, 404, 'not-found', 'no such path');
  }

  const http = createServer((request, res) => {
    const url = new URL(request.url ?? '/', 'http://double');
    rest(request, res, url).catch((error: unknown) => refusal(res, 500, 'internal', String(error)));
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://double');
    const urlCommand = /^\/v1\/ws\/([a-z-]+)$/.exec(url.pathname)?.[1];
    const treeFeed = url.pathname === '/graphql' && url.searchParams.get('format') === 'tree';
    if (url.pathname !== '/v1/ws' && urlCommand === undefined && !treeFeed) {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const connection = subscribes.length;
      subscribes.push(0);
      if (!known(keyOf(request, url))) {
        ws.send(JSON.stringify({ event: 'error', data: { code: 'unauthorized', message: 'Invalid secret key' } }));
        ws.close(4401, 'Invalid secret key');
        return;
      }
      ws.on('close', () => {
        for (const subscriber of subscribers) if (subscriber.ws === ws) subscribers.delete(subscriber);
      });
      if (treeFeed) return subscribe(ws, connection, 'on-stream-post-tree', { lastPosts: 0 });
      if (urlCommand !== undefined) {
        const args = Object.fromEntries([...url.searchParams].filter(([name]) => name !== 'apiKey'));
        return command(ws, connection, urlCommand, args);
      }
      ws.send(JSON.stringify({ event: 'connected', data: { message: 'connected' } }));
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { event: string; data?: Record<string, unknown> };
        command(ws, connection, frame.event, frame.data ?? {});
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    httpUrl: `http://127.0.0.1:${port}`,
    subscribes,
    lookups,
    selected,
    publish,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
