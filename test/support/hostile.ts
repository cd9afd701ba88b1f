import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { forEachFile } from './file-hooks.js';

/**
 * Services that misbehave on purpose, on port 0, closed after each test: the
 * client must end, or back off, whatever they do.
 */

const cleanups: (() => Promise<void>)[] = [];

forEachFile({
  async afterEach() {
    await Promise.all(cleanups.splice(0).map((close) => close()));
  },
});

async function listen(server: Server, sockets: Set<Socket>): Promise<number> {
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as AddressInfo).port;
}

/** Accepts TCP connections and never writes a byte: not even the WebSocket upgrade is answered. Returns its ws:// URL. */
export async function silentTcpService(): Promise<string> {
  const port = await listen(createTcpServer(), new Set());
  return `ws://127.0.0.1:${port}`;
}

/** Accepts HTTP requests, reads them, and never replies. Returns its ws:// URL (REST derives http:// from it). */
export async function silentHttpService(): Promise<string> {
  const server = createHttpServer((request) => request.resume());
  const port = await listen(server, new Set());
  return `ws://127.0.0.1:${port}`;
}

export const CONNECTED = JSON.stringify({
  event: 'connected',
  data: { message: 'connected', userId: 'u', streams: ['s'] },
});

export interface ScriptedService {
  url: string;
  wss: WebSocketServer;
}

export interface ScriptedOptions {
  /** Answers every upgrade itself (raw bytes on the socket) instead of accepting it. */
  refuse?: (socket: Duplex, request: IncomingMessage) => void;
  /** Answers plain HTTP requests (REST); by default 426 Upgrade Required, as a bare ws server does. */
  onRequest?: (request: IncomingMessage, response: ServerResponse) => void;
}

/** A WebSocket service that does only what `onConnection` does with each connection. */
export async function scriptedService(
  onConnection: (ws: WebSocket, request: IncomingMessage) => void,
  options: ScriptedOptions = {},
): Promise<ScriptedService> {
  const http = createHttpServer(
    options.onRequest ?? ((_request, response) => response.writeHead(426).end(STATUS_CODES[426])),
  );
  const wss = new WebSocketServer({ noServer: true });
  wss.on('connection', onConnection);
  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (options.refuse) options.refuse(socket, request);
    else wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  });
  cleanups.push(async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise((resolve) => wss.close(resolve));
  });
  const port = await listen(http, new Set());
  return { url: `ws://127.0.0.1:${port}`, wss };
}

/** The data of a subscribe command's `sub_ack`, echoing its requestId and lastPosts. */
export function subAck(
  frame: { event: string; requestId?: string; data?: { lastPosts?: number } },
  streamIds = ['s'],
): string {
  return JSON.stringify({
    event: 'sub_ack',
    requestId: frame.requestId,
    data: { command: frame.event, streamIds, lastPosts: frame.data?.lastPosts ?? 0, history: 0 },
  });
}
