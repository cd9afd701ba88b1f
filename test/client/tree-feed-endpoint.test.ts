import { describe, expect, it } from 'vitest';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import { Subscription } from '../../src/client/subscription.js';

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
