import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { DEFAULTS } from '../../src/server/defaults.js';
import {
  MAX_OPERATION_CHARACTERS,
  MAX_QUERY_ALIASES,
  MAX_QUERY_DEPTH,
  MAX_QUERY_TOKENS,
} from '../../src/server/graphql/document-limits.js';
import { Arrivals } from '../support/arrivals.js';
import {
  adminState,
  advanceClock,
  afterTest,
  http,
  KEYS,
  publish,
  readByServer,
  startTestServer,
  untilAdminState,
} from '../support/harness.js';

/**
 * A client written as the hosted service's public GraphQL client is: the `graphql-ws`
 * library, the key in `connectionParams`.
 */
function graphqlClient(
  server: StreamPostsServer,
  apiKey: string | undefined,
): { client: Client; closed: Promise<{ code: number; reason: string }> } {
  let onClosed!: (event: { code: number; reason: string }) => void;
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    onClosed = resolve;
  });
  const client = createClient({
    url: `${server.url}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: apiKey === undefined ? {} : { apiKey },
    retryAttempts: 0,
    lazy: false,
    // The close is what these tests assert on (onClosed); the library would also print it.
    onNonLazyError: () => {},
    on: { closed: (event) => onClosed(event as { code: number; reason: string }) },
  });
  afterTest(() => client.dispose());
  return { client, closed };
}

/** Every result of one subscription, as it arrives. */
function subscribe(
  client: Client,
  query: string,
): {
  results: FormattedExecutionResult<Record<string, unknown>, unknown>[];
  errors: unknown[];
  until: (count: number) => Promise<void>;
  ended: Promise<void>;
} {
  const results: FormattedExecutionResult<Record<string, unknown>, unknown>[] = [];
  const errors: unknown[] = [];
  const arrivals = new Arrivals();
  let end!: () => void;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  client.subscribe(
    { query },
    {
      next: (result) => {
        results.push(result);
        arrivals.notify();
      },
      error: (error) => {
        errors.push(error);
        end();
        arrivals.notify();
      },
      complete: () => {
        end();
        arrivals.notify();
      },
    },
  );
  return {
    results,
    errors,
    ended,
    until: (count) =>
      arrivals.until(
        () => results.length >= count,
        5000,
        () => new Error(`got ${JSON.stringify(results)} ${JSON.stringify(errors)}`),
      ),
  };
}

/** Subscribed once the server counts the subscription (a marker published meanwhile would race it). */
async function subscribed(server: StreamPostsServer, count: number): Promise<void> {
  await untilAdminState(server, (state) => state.subscriptions >= count);
}

describe('GraphQL subscriptions at /graphql (graphql-ws)', () => {
  it('streamPostCreated { text createdAt streamId } gets each post published after it, in order', async () => {
    const server = await startTestServer();
    const { client } = graphqlClient(server, KEYS.alice);
    const feed = subscribe(
      client,
      'subscription { streamPostCreated(streamIds: ["macro-wire"]) { text createdAt streamId } }',
    );
    await subscribed(server, 1);
    const first = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'first' });
    const second = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'second' });
    await feed.until(2);
    expect(feed.results).toEqual([
      { data: { streamPostCreated: { text: 'first', createdAt: first.createdAt, streamId: 'macro-wire' } } },
      { data: { streamPostCreated: { text: 'second', createdAt: second.createdAt, streamId: 'macro-wire' } } },
    ]);
  });

  it.each([
    ['once', 1],
    // Each stream once, however often it is named: a repeat is not its history again.
    ['50 times', 50],
  ])(
    'lastPosts: the recent posts of each stream first, oldest first, then live ones (stream named %s)',
    async (_name, times) => {
      const server = await startTestServer();
      const recent: { id: string }[] = (
        await http(server, 'GET', '/v1/streams/crypto-legal/posts?limit=2', { key: KEYS.alice })
      ).body.posts;
      const { client } = graphqlClient(server, KEYS.alice);
      const named = JSON.stringify(Array.from({ length: times }, () => 'crypto-legal'));
      const feed = subscribe(client, `subscription { streamPostCreated(streamIds: ${named}, lastPosts: 2) { id } }`);
      await feed.until(recent.length);
      const live = await publish(server, KEYS.cryptoLegal, { streamId: 'crypto-legal', content: 'live' });
      await feed.until(recent.length + 1);
      expect(feed.results.map((result) => (result.data as any).streamPostCreated.id)).toEqual([
        ...recent.map((post) => post.id).reverse(),
        live.id,
      ]);
    },
  );

  it.each([
    ['a wrong key', 'sp_not_a_key_12345', 'Invalid secret key'],
    ['no key', undefined, 'No secret key provided'],
  ])('%s closes the socket with 4401', async (_name, key, reason) => {
    const server = await startTestServer();
    const { closed } = graphqlClient(server, key);
    expect(await closed).toMatchObject({ code: 4401, reason });
  });

  it('the key in the x-api-key header or ?apiKey= works too', async () => {
    const server = await startTestServer();
    const client = createClient({
      url: `${server.url}/graphql?apiKey=${KEYS.alice}`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
    });
    afterTest(() => client.dispose());
    const feed = subscribe(client, 'subscription { streamPostCreated(streamIds: ["macro-wire"]) { text } }');
    await subscribed(server, 1);
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'by the query key' });
    await feed.until(1);
    expect(feed.results[0]).toEqual({ data: { streamPostCreated: { text: 'by the query key' } } });
  });

  it('a query that does not validate gets an error naming the field; the connection stays and subscribes next', async () => {
    const server = await startTestServer();
    const { client } = graphqlClient(server, KEYS.alice);
    const bad = subscribe(client, 'subscription { streamPostCreated { nope } }');
    await bad.ended;
    expect(JSON.stringify(bad.errors)).toContain('nope');
    const feed = subscribe(client, 'subscription { streamPostCreated(streamIds: ["macro-wire"]) { text } }');
    await subscribed(server, 1);
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'after the bad one' });
    await feed.until(1);
    expect(feed.results[0]).toEqual({ data: { streamPostCreated: { text: 'after the bad one' } } });
  });

  it('a hidden post is not sent while hidden; at release it comes with its text, on both fields', async () => {
    const server = await startTestServer();
    const { client } = graphqlClient(server, KEYS.alice);
    const created = subscribe(
      client,
      'subscription { streamPostCreated(streamIds: ["macro-wire"]) { id text hidden } }',
    );
    const released = subscribe(
      client,
      'subscription { streamPostReleased(streamIds: ["macro-wire"]) { id text hidden } }',
    );
    await subscribed(server, 2);
    const { now } = await adminState(server);
    const hidden = await publish(server, KEYS.macroWire, {
      streamId: 'macro-wire',
      content: 'embargoed CPI',
      releaseAt: new Date(Date.parse(now) + 60_000).toISOString(),
    });
    const plain = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'plain' });
    await created.until(1);
    expect(created.results[0]).toEqual({ data: { streamPostCreated: { id: plain.id, text: 'plain', hidden: false } } });
    await advanceClock(server, 120_000);
    await created.until(2);
    await released.until(1);
    expect(created.results[1]).toEqual({
      data: { streamPostCreated: { id: hidden.id, text: 'embargoed CPI', hidden: false } },
    });
    expect(released.results).toEqual([
      { data: { streamPostReleased: { id: hidden.id, text: 'embargoed CPI', hidden: false } } },
    ]);
  });

  it('streams not followed are an error with their code; custom targets filter as on /v1/ws', async () => {
    const server = await startTestServer();
    const { client } = graphqlClient(server, KEYS.bob);
    const refused = subscribe(client, 'subscription { streamPostCreated(streamIds: ["crypto-legal"]) { id } }');
    await refused.until(1);
    expect(refused.results[0]?.errors?.[0]).toMatchObject({ extensions: { code: 'forbidden' } });
    // bob selected SOL on whale-alerts (the demo seed).
    const feed = subscribe(
      client,
      'subscription { streamPostCreated(streamIds: ["whale-alerts"]) { text customTarget } }',
    );
    await subscribed(server, 1);
    await publish(server, KEYS.whaleAlerts, { streamId: 'whale-alerts', content: 'eth moves', customTarget: 'ETH' });
    await publish(server, KEYS.whaleAlerts, { streamId: 'whale-alerts', content: 'sol moves', customTarget: 'SOL' });
    await feed.until(1);
    expect(feed.results).toEqual([{ data: { streamPostCreated: { text: 'sol moves', customTarget: 'SOL' } } }]);
  });

  it('closing the server closes the client with 1001', async () => {
    const server = await startTestServer();
    const { client, closed } = graphqlClient(server, KEYS.alice);
    subscribe(client, 'subscription { streamPostCreated { id } }');
    await subscribed(server, 1);
    await server.close();
    expect((await closed).code).toBe(1001);
  });
});

interface BareGraphqlSocket {
  ws: WebSocket;
  /** Pings from the server so far. */
  pings: () => number;
  /** Resolves once the server has sent this many pings. */
  pinged: (count: number) => Promise<void>;
  /** The close code. */
  closed: Promise<number>;
  /** Every graphql-transport-ws message from the server after the ack, parsed. */
  messages: { type: string; id?: string; payload?: any }[];
  /** Resolves once `ready()` holds, checked at each message. */
  until: (ready: () => boolean, what: string) => Promise<void>;
}

/** A bare graphql-transport-ws connection, initialised; counts the server's pings. */
async function initialisedSocket(
  server: StreamPostsServer,
  apiKey: string,
  options: WebSocket.ClientOptions = {},
): Promise<BareGraphqlSocket> {
  const ws = new WebSocket(`${server.url}/graphql`, 'graphql-transport-ws', options);
  afterTest(() => ws.terminate());
  let pings = 0;
  const arrivals = new Arrivals();
  ws.on('ping', () => {
    pings += 1;
    arrivals.notify();
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const messages: BareGraphqlSocket['messages'] = [];
  const acked = new Promise<void>((resolve) =>
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as BareGraphqlSocket['messages'][number];
      if (message.type === 'connection_ack') resolve();
      else messages.push(message);
      arrivals.notify();
    }),
  );
  ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey } }));
  await acked;
  return {
    ws,
    pings: () => pings,
    pinged: (count) =>
      arrivals.until(
        () => pings >= count,
        10_000,
        () => new Error(`ping ${count} never came`),
      ),
    closed,
    messages,
    until: (ready, what) => arrivals.until(ready, 10_000, () => new Error(`${what} never came`)),
  };
}

describe('keep-alive', () => {
  it('pings GraphQL connections in the same rounds, and terminates one that left the last ping unanswered', async () => {
    // No timed round comes during the test: every round is asked for.
    const server = await startTestServer({ keepAliveMs: 3_600_000 });
    const answering = await initialisedSocket(server, KEYS.alice);
    const silent = await initialisedSocket(server, KEYS.bob, { autoPong: false });

    expect(await server.keepAliveRound()).toEqual({ pinged: 2, terminated: 0 });
    await answering.pinged(1);
    await silent.pinged(1);
    await readByServer(answering.ws);
    expect(await server.keepAliveRound()).toEqual({ pinged: 1, terminated: 1 });
    expect(await silent.closed).toBe(1006);
    await answering.pinged(2);
    expect(answering.ws.readyState).toBe(WebSocket.OPEN);
    expect(silent.pings()).toBe(1);
  });
});

/** A subscription at every shape limit at once: as deep and with as many aliases as allowed. */
const AT_THE_LIMITS = `subscription { streamPostCreated(streamIds: ["macro-wire"]) { ${'... on Post { '.repeat(MAX_QUERY_DEPTH - 2)}${Array.from(
  { length: MAX_QUERY_ALIASES },
  (_, i) => `t${i}: text`,
).join(' ')}${' }'.repeat(MAX_QUERY_DEPTH - 2)} } }`;

describe('caps and cost limits', () => {
  it('a burst of subscribes on every connection a key may open never passes the caps', async () => {
    const server = await startTestServer({ keyRateLimit: 0 });
    const { maxConnectionsPerKey: connections, maxSubscriptions: cap } = DEFAULTS;
    const over = 16;
    const sockets = await Promise.all(Array.from({ length: connections }, () => initialisedSocket(server, KEYS.alice)));
    for (const socket of sockets) {
      // All in one go: every subscribe is read before the first of them is counted.
      for (let id = 0; id < cap + over; id += 1) {
        socket.ws.send(
          JSON.stringify({
            id: String(id),
            type: 'subscribe',
            payload: { query: 'subscription { streamPostCreated(streamIds: ["macro-wire"]) { text } }' },
          }),
        );
      }
    }
    const refused = (socket: BareGraphqlSocket) =>
      socket.messages.filter(
        (message) => message.type === 'next' && message.payload?.errors?.[0]?.extensions?.code === 'limit-exceeded',
      ).length;
    for (const socket of sockets) await socket.until(() => refused(socket) >= over, 'the refusals');
    await subscribed(server, connections * cap);
    expect((await adminState(server)).subscriptions).toBe(connections * cap);
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'to each held subscription' });
    const delivered = (socket: BareGraphqlSocket) =>
      socket.messages.filter(
        (message) => message.payload?.data?.streamPostCreated?.text === 'to each held subscription',
      ).length;
    for (const socket of sockets) {
      await socket.until(() => delivered(socket) >= cap, 'the post');
      expect(refused(socket)).toBe(over);
    }
    // Every socket still holds exactly its cap: the post came once per held subscription.
    await readByServer(sockets[0]!.ws);
    expect(sockets.map(delivered)).toEqual(sockets.map(() => cap));
  });

  it.each([
    [
      'more tokens than the limit',
      `subscription { streamPostCreated { ${'id '.repeat(MAX_QUERY_TOKENS)} } }`,
      'tokens',
    ],
    [
      'nesting 20,000 deep',
      `subscription { streamPostCreated { ${'a{'.repeat(20_000)}${'}'.repeat(20_000)} } }`,
      'tokens',
    ],
    [
      'nesting past the depth limit',
      `subscription { streamPostCreated { ${'... on Post { '.repeat(MAX_QUERY_DEPTH - 1)} id ${'} '.repeat(MAX_QUERY_DEPTH - 1)} } }`,
      'depth',
    ],
    [
      'more aliases than the limit',
      `subscription { streamPostCreated { ${Array.from({ length: MAX_QUERY_ALIASES + 1 }, (_, i) => `t${i}: text`).join(' ')} } }`,
      'aliases',
    ],
    [
      'a query over the size limit',
      `# ${'x'.repeat(MAX_OPERATION_CHARACTERS)}\nsubscription { streamPostCreated { id } }`,
      'size',
    ],
    ['a syntax error', 'subscription { streamPostCreated { id }', undefined],
  ])('%s: an error naming the limit; the connection stays and subscribes next', async (_name, query, limit) => {
    const server = await startTestServer();
    const { client, closed } = graphqlClient(server, KEYS.alice);
    let closes = 0;
    void closed.then(() => (closes += 1));
    const bad = subscribe(client, query);
    await bad.ended;
    const errors = bad.errors[0] as { extensions?: { code?: string; limit?: string } }[];
    expect(errors).toHaveLength(1);
    if (limit === undefined) expect(errors[0]?.extensions?.code).toBeUndefined();
    else expect(errors[0]?.extensions).toMatchObject({ code: 'limit-exceeded', limit });
    const feed = subscribe(client, AT_THE_LIMITS);
    await subscribed(server, 1);
    await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'after the refused one' });
    await feed.until(1);
    expect(Object.values((feed.results[0]?.data as any).streamPostCreated)).toEqual(
      Array.from({ length: MAX_QUERY_ALIASES }, () => 'after the refused one'),
    );
    expect(closes).toBe(0);
  });

  it('bursts of heavy queries from several sockets: /healthz keeps answering between them', async () => {
    const server = await startTestServer();
    // The worst the limits admit (validation compares each pair of the repeated field's
    // selections), and two the limits refuse.
    const heavy = [
      `query { ${'streams { id } '.repeat((MAX_QUERY_TOKENS - 3) / 4)}}`,
      `subscription { streamPostCreated { ${'id '.repeat(30_000)} } }`,
      `subscription { streamPostCreated { ${'id '.repeat(20_000)} } }`,
    ];
    const sockets = await Promise.all(
      [KEYS.alice, KEYS.bob, KEYS.alice, KEYS.bob].map((key) => initialisedSocket(server, key)),
    );
    const rounds = 10;
    const answers = (socket: BareGraphqlSocket) =>
      socket.messages.filter((message) => message.type === 'complete' || message.type === 'error').length;
    const answered = () => sockets.reduce((sum, socket) => sum + answers(socket), 0);
    const total = sockets.length * rounds * heavy.length;
    let running = true;
    const healthAnswers: { status: number; heavyAnsweredBefore: number }[] = [];
    const health = (async () => {
      while (running) {
        const { status } = await http(server, 'GET', '/healthz');
        healthAnswers.push({ status, heavyAnsweredBefore: answered() });
      }
    })();
    // Each socket sends all its queries at once: bursts, read in few chunks.
    for (const socket of sockets) {
      for (let round = 0; round < rounds; round += 1) {
        for (const [index, query] of heavy.entries()) {
          socket.ws.send(JSON.stringify({ id: `${round}-${index}`, type: 'subscribe', payload: { query } }));
        }
      }
    }
    for (const socket of sockets) await socket.until(() => answers(socket) >= rounds * heavy.length, 'every answer');
    running = false;
    await health;
    expect(answered()).toBe(total);
    expect(healthAnswers.every((answer) => answer.status === 200)).toBe(true);
    // Answered in the middle of the bursts, not only before or after them.
    expect(
      healthAnswers.filter((answer) => answer.heavyAnsweredBefore > 0 && answer.heavyAnsweredBefore < total).length,
    ).toBeGreaterThan(1);
    for (const socket of sockets) {
      expect(socket.messages.filter((message) => message.type === 'complete')).toHaveLength(rounds);
      expect(
        socket.messages
          .filter((message) => message.type === 'error')
          .map((message) => message.payload[0].extensions.limit),
      ).toEqual(Array.from({ length: rounds }, () => ['size', 'tokens']).flat());
    }
  });
});
