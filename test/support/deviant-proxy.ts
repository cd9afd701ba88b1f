import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

/**
 * A hosted-style double that deviates on purpose: every connection and request goes on to a
 * real service, and what comes back is changed as asked. It counts what clients sent, so a test
 * can see that nothing was written.
 */
export interface Deviations {
  /** Close a refused key with this code instead of the service's. */
  badKeyCloseCode?: number;
  /** Never pass a `sub_ack` on. */
  noSubAck?: boolean;
  /** Ask the service for at most this many posts a stream, and say so in the `sub_ack`. */
  lastPostsCap?: number;
  /** Take `coin` and `suggestions` out of tree items. */
  treeWithoutCoin?: boolean;
}

export interface DeviantProxy {
  url: string;
  /** Frames clients sent (pings too), and the `add-stream-post` commands among them. */
  frames: number;
  publishes: number;
  /** REST requests, and those that were not GET. */
  requests: number;
  writes: number;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

function capped(text: string, cap: number | undefined): string {
  if (cap === undefined) return text;
  try {
    const frame = JSON.parse(text) as { event?: string; data?: Json };
    const asked = Number(frame.data?.['lastPosts'] ?? 0);
    if (frame.event?.startsWith('on-stream-post') && asked > cap) frame.data!['lastPosts'] = cap;
    return JSON.stringify(frame);
  } catch {
    return text;
  }
}

function deviated(text: string, deviations: Deviations): string | undefined {
  let frame: Json;
  try {
    frame = JSON.parse(text) as Json;
  } catch {
    return text;
  }
  if (frame['event'] === 'sub_ack') return deviations.noSubAck ? undefined : text;
  if (deviations.treeWithoutCoin && frame['event'] === undefined && '_id' in frame) {
    delete frame['coin'];
    delete frame['suggestions'];
    return JSON.stringify(frame);
  }
  return text;
}

export async function startDeviantProxy(upstream: string, deviations: Deviations): Promise<DeviantProxy> {
  const counts = { frames: 0, publishes: 0, requests: 0, writes: 0 };
  const httpUpstream = upstream.replace(/^ws/, 'http');
  const server = createServer((request, response) => {
    counts.requests += 1;
    if (request.method !== 'GET') counts.writes += 1;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(([name]) => ['x-api-key', 'content-type'].includes(name)),
      ) as Record<string, string>;
      fetch(`${httpUpstream}${request.url}`, {
        method: request.method,
        headers,
        ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
      })
        .then(async (answer) => {
          response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
          response.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => response.writeHead(502).end());
    });
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => [...protocols][0] ?? false });
  server.on('upgrade', (request: IncomingMessage, socket, head) => {
    const key = request.headers['x-api-key'];
    const protocol = request.headers['sec-websocket-protocol'];
    const onward = new WebSocket(
      `${upstream}${request.url}`,
      protocol?.split(',').map((each) => each.trim()),
      {
        headers: typeof key === 'string' ? { 'x-api-key': key } : {},
      },
    );
    onward.on('unexpected-response', (_request, answer) => {
      socket.end(`HTTP/1.1 ${answer.statusCode} Refused\r\n\r\n`);
    });
    onward.on('error', () => socket.destroy());
    onward.on('open', () =>
      wss.handleUpgrade(request, socket, head, (client) => {
        client.on('message', (data) => {
          counts.frames += 1;
          const text = String(data);
          if (text.includes('"add-stream-post"')) counts.publishes += 1;
          onward.send(capped(text, deviations.lastPostsCap));
        });
        client.on('ping', () => (counts.frames += 1));
        client.on('close', () => onward.close());
        onward.on('message', (data) => {
          const out = deviated(String(data), deviations);
          if (out !== undefined) client.send(out);
        });
        onward.on('close', (code, reason) => {
          const refusal = code === 4401 && deviations.badKeyCloseCode !== undefined;
          client.close(refusal ? deviations.badKeyCloseCode : code === 1005 ? 1000 : code, String(reason));
        });
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    get frames() {
      return counts.frames;
    },
    get publishes() {
      return counts.publishes;
    },
    get requests() {
      return counts.requests;
    },
    get writes() {
      return counts.writes;
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
