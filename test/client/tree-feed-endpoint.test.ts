import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { Connection } from '../../src/client/connection.js';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import { Subscription } from '../../src/client/subscription.js';
import { scriptedService } from '../support/hostile.js';

describe('resolveEndpoint: the hosted tree feed address', () => {
  it.each([
    ['ws://localhost:8787/graphql?format=tree', 'ws://localhost:8787/graphql?format=tree', 'http://localhost:8787'],
    [
      'https://api.example.com/graphql/?format=tree',
      'wss://api.example.com/graphql?format=tree',
      'https://api.example.com',
    ],
    [
      'wss://example.com/p/graphql?format=tree&streamIds=a,b&lastPosts=5',
      'wss://example.com/p/graphql?format=tree&streamIds=a,b&lastPosts=5',
      'https://example.com/p',
    ],
  ])('%s', (raw, wsUrl, httpBase) => {
    expect(resolveEndpoint(raw)).toEqual({ wsUrl, httpBase, treeFeed: true });
  });

  it.each([
    ['listen', { command: 'on-stream-post', streamIds: undefined, lastPosts: 0 }],
    ['--streams', { command: 'on-stream-post-tree', streamIds: ['macro-wire'], lastPosts: 0 }],
  ] as const)('%s on a tree feed address is a usage error', (_name, options) => {
    const endpoint = resolveEndpoint('ws://localhost:8787/graphql?format=tree');
    expect(
      () =>
        new Subscription(
          { endpoint, apiKey: 'k' },
          { ...options, streamIds: options.streamIds ? [...options.streamIds] : undefined },
          { onDelivery() {} },
        ),
    ).toThrow(expect.objectContaining({ kind: 'usage' }));
  });
});

describe('the dialect asked for (PROTOCOL.md B1a)', () => {
  it('sends hello=1 on the bare endpoint and on the tree feed address, and its first command before any message', async () => {
    const requests: string[] = [];
    const firstFrames: string[] = [];
    const service = await scriptedService((ws: WebSocket) => {
      // Says nothing first: the command must come all the same.
      ws.once('message', (data) => {
        firstFrames.push(String(data));
        ws.close();
      });
    });
    service.wss.on('connection', (_ws, request) => requests.push(request.url ?? ''));
    const closed: Promise<unknown>[] = [];
    for (const url of [service.url, `${service.url}/graphql?format=tree&streamIds=a,b`]) {
      const connection = new Connection(
        { endpoint: resolveEndpoint(url), apiKey: 'k', reconnect: false },
        { onReady: () => connection.send({ event: 'on-stream-post', data: {} }) },
      ).start();
      closed.push(connection.done.catch(() => {}));
    }
    await Promise.all(closed);
    expect(requests).toEqual(['/v1/ws?hello=1', '/graphql?format=tree&streamIds=a,b&hello=1']);
    expect(firstFrames.map((frame) => JSON.parse(frame).event)).toEqual(['on-stream-post', 'on-stream-post']);
  });
});
