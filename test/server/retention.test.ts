import { spawn } from 'node:child_process';
import { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { queryObjects } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { afterTest, KEYS, startTestServer } from '../support/harness.js';

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
  const ws = new WebSocket(url + '/v1/ws?hello=1', { headers: { 'x-api-key': key } });
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

describe('what an open connection keeps', () => {
  it('not its upgrade request: headers and URL are dropped once the session has what it needs', async () => {
    const server = await startTestServer({ maxConnectionsPerKey: 0 });
    const before = requestsInHeap();
    const holder = spawn(process.execPath, ['-e', HOLDER, server.url, KEYS.alice, String(CONNECTIONS)], {
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
    // Each of the 200 open connections would hold one if any closure kept its request.
    expect(requestsInHeap() - before).toBeLessThan(CONNECTIONS / 10);
  });
});
