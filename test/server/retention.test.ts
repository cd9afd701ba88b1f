import { spawn } from 'node:child_process';
import { createServer, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { queryObjects } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { CommandQueue } from '../../src/server/ws/command-queue.js';
import { afterTest, http, KEYS, startTestServer } from '../support/harness.js';

const CONNECTIONS = 200;
const wsModule = createRequire(import.meta.url).resolve('ws');

/**
 * Opens `count` subscribed connections from another process (so that only the server's
 * objects are in this heap), prints `ready` once all have their `sub_ack`, and holds them
 * until its standard input closes.
 */
const HOLDER = `
const WebSocket = require(${JSON.stringify(wsModule)});
const [url, key, count] = process.argv.slice(1);
let ready = 0;
for (let i = 0; i < Number(count); i += 1) {
  const ws = new WebSocket(url, { headers: { 'x-api-key': key } });
  ws.on('open', () => ws.send(JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'macro-wire' } })));
  ws.on('message', (data) => {
    if (JSON.parse(data).event === 'sub_ack' && ++ready === Number(count)) console.log('ready');
  });
}
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

function requestsInHeap(): number {
  // A full collection first: what is counted is what something still holds.
  return queryObjects(IncomingMessage, { format: 'count' }) as number;
}

function functionsInHeap(): number {
  return queryObjects(Function, { format: 'count' }) as number;
}

function commandQueuesInHeap(): number {
  return queryObjects(CommandQueue, { format: 'count' }) as number;
}

/** Opens CONNECTIONS subscribed connections to `url` from another process; resolves once all are ready. */
async function holdConnections(url: string, key: string): Promise<void> {
  const holder = spawn(process.execPath, ['-e', HOLDER, url, key, String(CONNECTIONS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  afterTest(() => {
    holder.stdin.end();
  });
  await new Promise<void>((resolve, reject) => {
    holder.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    holder.once('exit', (code) => reject(new Error(`the connections' process ended early (${code})`)));
  });
}

// Shared by every connection of the bare server below, so that it adds no function of its own.
function answerSubscribe(this: WebSocket): void {
  this.send('{"event":"sub_ack","data":{}}');
}

/** A bare `ws` server that answers every frame with a `sub_ack`: what `ws` itself makes per connection. */
async function startBareServer(): Promise<string> {
  const http = createServer();
  const wss = new WebSocketServer({ server: http, clientTracking: false });
  wss.on('connection', (ws) => ws.on('message', answerSubscribe));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  afterTest(
    () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  );
  return `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
}

describe('what an open connection keeps', () => {
  it('not its upgrade request: headers and URL are dropped once the session has what it needs', async () => {
    const server = await startTestServer({ maxConnectionsPerKey: 0 });
    const before = requestsInHeap();
    await holdConnections(`${server.url}/v1/ws?hello=1`, KEYS.alice);
    // Each of the 200 open connections would hold one if any closure kept its request.
    expect(requestsInHeap() - before).toBeLessThan(CONNECTIONS / 10);
  });

  it('no function of its own: its listeners are shared by every connection, as are its rate limits until it sends', async () => {
    // The default rate limits on: a connection's buckets are made at its first command, not at connect.
    // One instance (a port of its own): the three-instance harness's round-robin proxy makes functions of its own.
    const server = await startTestServer({ port: 0, maxConnectionsPerKey: 0, rateLimit: 200 });
    const bareUrl = await startBareServer();
    let before = functionsInHeap();
    await holdConnections(bareUrl, KEYS.alice);
    const ownedByWs = (functionsInHeap() - before) / CONNECTIONS;
    before = functionsInHeap();
    await holdConnections(`${server.url}/v1/ws?hello=1`, KEYS.alice);
    const ours = (functionsInHeap() - before) / CONNECTIONS;
    // ws makes a few per connection; a closure per listener, or per session, would add one per connection each.
    expect(ours - ownedByWs).toBeLessThan(0.5);
  });

  it('not its command queue once nothing waits: at once without rate limits, with them at a keep-alive round once its buckets are full again', async () => {
    // One instance each (a port of its own), so that the round below reaches every connection.
    const unlimited = await startTestServer({ port: 0, maxConnectionsPerKey: 0, rateLimit: 0 });
    let before = commandQueuesInHeap();
    await holdConnections(`${unlimited.url}/v1/ws?hello=1`, KEYS.alice);
    // Each has sent its subscribe and had its answer: nothing a queue made afresh would not hold.
    expect(commandQueuesInHeap() - before).toBeLessThan(CONNECTIONS / 10);

    const limited = await startTestServer({ port: 0, maxConnectionsPerKey: 0, rateLimit: 200 });
    before = commandQueuesInHeap();
    await holdConnections(`${limited.url}/v1/ws?hello=1`, KEYS.alice);
    // Each has taken a token from its bucket: a fresh queue's bucket would be fuller.
    expect(commandQueuesInHeap() - before).toBeGreaterThanOrEqual(CONNECTIONS);
    // At 200 a second a token comes back in 5 ms: by the round, (nearly) every bucket is full again.
    expect((await http(limited, 'POST', '/_admin/keep-alive', { body: {} })).status).toBe(200);
    expect(commandQueuesInHeap() - before).toBeLessThan(CONNECTIONS / 10);
  });
});
