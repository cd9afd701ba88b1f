import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { Arrivals } from '../support/arrivals.js';
import { PingingTerminal } from '../support/tree-terminal.js';
import {
  adminState,
  advanceClock,
  afterTest,
  http,
  KEYS,
  readByServer,
  restPublish,
  SEVERAL_INSTANCES,
  startTestServer,
  untilAdminState,
} from '../support/harness.js';

interface ShownItem {
  id: string;
  time: number;
  text: string;
  coins: string[];
  link: string | undefined;
}

const FEED = '/graphql?format=tree&';
const TREE_URL_FORM = '/v1/ws/on-stream-post-tree?';

const FIRST_URL = /https?:\/\/[^\s<>()"'`[\]]+/;

/**
 * Behaves as the public news terminals written for the hosted tree feed do: opens the
 * feed address with the key in the query, sends nothing, and parses every message as a
 * tree item that must have a numeric `time`; text from `en`, then `title`.
 */
class Terminal {
  readonly items: ShownItem[] = [];
  /** Messages it could not use: one of these breaks such a terminal. */
  readonly unparseable: string[] = [];
  /** Every text message, in order, as it came. */
  readonly received: string[] = [];
  pings = 0;
  pongs = 0;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #arrivals = new Arrivals();

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.#take(data.toString());
      this.#arrivals.notify();
    });
    ws.on('ping', () => {
      this.pings += 1;
      this.#arrivals.notify();
    });
    ws.on('error', () => {});
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /** `address`: the hosted tree feed, or the tree command's URL form the hosted docs give Tree Terminal. */
  static open(server: StreamPostsServer, key: string, query = '', address: string = FEED): Terminal {
    return new Terminal(new WebSocket(`${server.url}${address}apiKey=${encodeURIComponent(key)}${query}`));
  }

  #take(raw: string): void {
    this.received.push(raw);
    // The answer to its own text `ping` (B3): the Tree family of terminals expects it.
    if (raw === 'pong') {
      this.pongs += 1;
      return;
    }
    let item: any;
    try {
      item = JSON.parse(raw);
    } catch {
      this.unparseable.push(raw);
      return;
    }
    if (typeof item !== 'object' || item === null || typeof item.time !== 'number' || typeof item._id !== 'string') {
      this.unparseable.push(raw);
      return;
    }
    const text: string = item.en || item.title || '';
    const coins = [item.coin, ...(Array.isArray(item.suggestions) ? item.suggestions.map((s: any) => s?.coin) : [])];
    this.items.push({
      id: item._id,
      time: item.time,
      text,
      coins: [...new Set(coins.filter((coin): coin is string => typeof coin === 'string'))],
      link: FIRST_URL.exec(text)?.[0],
    });
  }

  async until(ready: () => boolean, what: string): Promise<void> {
    await this.#arrivals.until(
      ready,
      5000,
      () => new Error(`terminal never saw ${what}; items ${JSON.stringify(this.items)}`),
    );
  }

  async item(id: string, count = 1): Promise<ShownItem> {
    await this.until(() => this.items.filter((item) => item.id === id).length >= count, `item ${id} x${count}`);
    return this.items.filter((item) => item.id === id)[count - 1]!;
  }

  close(): void {
    this.ws.close();
  }
}

async function openTerminal(
  server: StreamPostsServer,
  key: string,
  query = '',
  address: string = FEED,
): Promise<Terminal> {
  const terminal = Terminal.open(server, key, query, address);
  await new Promise<void>((resolve, reject) => {
    terminal.ws.once('open', () => resolve());
    terminal.ws.once('error', reject);
  });
  // The subscription is in place once the server counts it (a tree feed sends no sub_ack).
  await untilAdminState(server, (state) => state.subscriptions >= 1);
  return terminal;
}

describe('the hosted tree feed address /graphql?format=tree', () => {
  it.each([FEED, TREE_URL_FORM])(
    'gives a terminal written for the hosted service every post, readable, and nothing it cannot parse (%s)',
    async (address) => {
      const server = await startTestServer();
      const terminal = await openTerminal(server, KEYS.alice, '', address);

      const plain = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'Fed holds rates at 4.25%' });
      expect(await terminal.item(plain.id)).toEqual({
        id: plain.id,
        time: Date.parse(plain.createdAt),
        text: 'Fed holds rates at 4.25%',
        coins: [],
        link: undefined,
      });

      const markdown = await restPublish(server, KEYS.cryptoLegal, 'crypto-legal', {
        contentType: 'markdown',
        content: '**SEC v. Binance**: dismissal filed, $BNB and $eth move. Docket: https://example.org/docket/42.',
      });
      expect(await terminal.item(markdown.id)).toMatchObject({
        text: markdown.text,
        coins: ['BNB', 'ETH'],
        link: 'https://example.org/docket/42.',
      });

      const { now } = await adminState(server);
      const hidden = await restPublish(server, KEYS.macroWire, 'macro-wire', {
        content: 'CPI 3.1% $BTC https://example.org/cpi',
        releaseAt: new Date(Date.parse(now) + 60_000).toISOString(),
      });
      // Held back while hidden (the hosted dialect, B1a): the next item is the post after it.
      const meanwhile = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'while it is hidden' });
      expect((await terminal.item(meanwhile.id)).text).toBe('while it is hidden');
      await advanceClock(server, 120_000);
      expect(await terminal.item(hidden.id)).toMatchObject({
        text: 'CPI 3.1% $BTC https://example.org/cpi',
        coins: ['BTC'],
        link: 'https://example.org/cpi',
      });

      // Keep-alive is a ping alone: the next item after one is still the next message.
      const pingsBefore = terminal.pings;
      await server.keepAliveRound();
      await terminal.until(() => terminal.pings > pingsBefore, 'a ping');
      const fromLegal = await restPublish(server, KEYS.cryptoLegal, 'crypto-legal', {
        content: 'legal after keep-alive',
      });
      const fromMacro = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'macro after keep-alive' });
      expect((await terminal.item(fromLegal.id)).text).toBe('legal after keep-alive');
      expect((await terminal.item(fromMacro.id)).text).toBe('macro after keep-alive');

      expect(terminal.unparseable).toEqual([]);
      expect(terminal.items.map((item) => item.id)).toEqual([
        plain.id,
        markdown.id,
        meanwhile.id,
        hidden.id,
        fromLegal.id,
        fromMacro.id,
      ]);
    },
  );

  it('honours streamIds and lastPosts in the query, and the key as an x-api-key header', async () => {
    const server = await startTestServer();
    const ws = new WebSocket(`${server.url}/graphql?format=tree&streamIds=macro-wire&lastPosts=5`, {
      headers: { 'x-api-key': KEYS.alice },
    });
    const terminal = new Terminal(ws);
    const seeded = (await http(server, 'GET', '/v1/streams/macro-wire/posts', { key: KEYS.alice })).body.posts;
    await terminal.until(() => terminal.items.length >= seeded.length, 'the history');
    const legal = await restPublish(server, KEYS.cryptoLegal, 'crypto-legal', { content: 'not followed here' });
    const macro = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'followed here' });
    await terminal.item(macro.id);
    expect(terminal.items.map((item) => item.id)).not.toContain(legal.id);
    expect(terminal.items.map((item) => item.id)).toEqual([
      ...seeded.map((post: { id: string }) => post.id).reverse(),
      macro.id,
    ]);
    expect(terminal.unparseable).toEqual([]);
  });

  it.each([FEED, TREE_URL_FORM])('a bad key closes with 4401 and nothing else is sent (%s)', async (address) => {
    const server = await startTestServer();
    const terminal = Terminal.open(server, 'sp_not_a_key', '', address);
    expect(await terminal.closed).toEqual({ code: 4401, reason: 'Invalid secret key' });
    expect(terminal.unparseable).toEqual([]);
    expect(terminal.items).toEqual([]);
  });

  it.each([
    ['a stream the user does not follow', '&streamIds=no-such-stream'],
    ['lastPosts out of range', '&lastPosts=101'],
    [
      'unknown streams named at length (the reason is cut to 123 bytes)',
      `&streamIds=${Array.from({ length: 5 }, (_, i) => `${i}${'x'.repeat(63)}`).join(',')}`,
    ],
  ])('%s closes with 1008 instead of sending an error event', async (_name, query) => {
    const server = await startTestServer();
    const terminal = Terminal.open(server, KEYS.bob, query);
    const closed = await terminal.closed;
    expect(closed.code).toBe(1008);
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123);
    expect(terminal.unparseable).toEqual([]);
  });

  it('a key past its connection cap is closed with 1008 and sent nothing', async ({ skip }) => {
    skip(SEVERAL_INSTANCES, "one instance's cap: with several instances each counts its own connections");
    const server = await startTestServer({ maxConnectionsPerKey: 1 });
    const first = await openTerminal(server, KEYS.alice);
    const second = Terminal.open(server, KEYS.alice);
    const closed = await second.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/connections/);
    expect(second.unparseable).toEqual([]);
    expect(first.unparseable).toEqual([]);
  });

  it.each([FEED, TREE_URL_FORM])(
    'ignores every frame a client sends but a text ping, answered pong, and keeps the feed (%s)',
    async (address) => {
      const server = await startTestServer();
      const terminal = await openTerminal(server, KEYS.alice, '', address);
      const before = await adminState(server);
      const ignored: (string | Buffer)[] = [
        `login ${KEYS.alice}`,
        JSON.stringify({
          event: 'add-stream-post',
          data: { streamId: 'macro-wire', content: 'x', contentType: 'rawtext' },
        }),
        JSON.stringify({ event: 'on-stream-post', data: { streamIds: 'no-such-stream' } }),
        JSON.stringify({ type: 'ping' }),
        'not json',
        'PING',
        'ping ',
        'ping\n',
        '',
      ];
      for (const frame of ignored) terminal.ws.send(frame);
      terminal.ws.send('ping');
      // Binary, even one that reads `ping`: only a text frame is the terminals' ping.
      terminal.ws.send(Buffer.from('ping'), { binary: true });
      terminal.ws.send(Buffer.from([0xff, 0x00, 0x7b]), { binary: true });
      for (const frame of ignored) terminal.ws.send(frame);
      terminal.ws.send('ping');
      // Frames are read in order: once the second pong is here, every other frame was read.
      await terminal.until(() => terminal.pongs === 2, 'two pongs');
      const post = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'marker' });
      await terminal.item(post.id);
      terminal.ws.send('ping');
      await terminal.until(() => terminal.pongs === 3, 'a third pong');
      const after = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'after' });
      await terminal.item(after.id);
      expect(terminal.received.map((raw) => (raw === 'pong' ? raw : JSON.parse(raw)._id))).toEqual([
        'pong',
        'pong',
        post.id,
        'pong',
        after.id,
      ]);
      expect(terminal.unparseable).toEqual([]);
      expect(terminal.ws.readyState).toBe(WebSocket.OPEN);
      // The publish sent over the feed published nothing: the two posts are the REST ones.
      expect((await adminState(server)).posts).toBe(before.posts + 2);
    },
  );

  it.each([FEED, TREE_URL_FORM])(
    'a terminal of the Tree family (login, then a ping it wants a pong to within 2 s) stays on one connection (%s)',
    async (address) => {
      const server = await startTestServer();
      const terminal = new PingingTerminal(`${server.url}${address}apiKey=${KEYS.alice}`, KEYS.alice, 100);
      afterTest(() => terminal.stop());
      await untilAdminState(server, (state) => state.subscriptions >= 1);
      const ids: string[] = [];
      for (let round = 1; round <= 3; round += 1) {
        const pongs = terminal.pongs;
        await terminal.until(() => terminal.pongs >= pongs + 2, `pong ${pongs + 2}`);
        ids.push((await restPublish(server, KEYS.macroWire, 'macro-wire', { content: `round ${round}` })).id);
        await terminal.until(() => terminal.itemIds.length === ids.length, `post ${round}`);
      }
      expect(terminal.connections).toBe(1);
      expect(terminal.itemIds).toEqual(ids);
    },
  );

  it('a stop-pongs fault on its connection stops the text pongs too: the terminal reconnects, and the new connection gets them', async ({
    skip,
  }) => {
    skip(SEVERAL_INSTANCES, "faults are one instance's: the connection may be on another");
    const server = await startTestServer();
    const terminal = new PingingTerminal(`${server.url}${FEED}apiKey=${KEYS.alice}`, KEYS.alice, 100);
    afterTest(() => terminal.stop());
    await terminal.until(() => terminal.pongs >= 1, 'a pong');
    const [connection] = (await http(server, 'GET', '/_admin/connections')).body.connections;
    const fault = await http(server, 'POST', '/_admin/faults', {
      body: { type: 'stop-pongs', scope: { connection: connection.id } },
    });
    expect(fault.status).toBe(200);
    await terminal.until(() => terminal.connections === 2, 'a reconnect', 2);
    const pongs = terminal.pongs;
    await terminal.until(() => terminal.pongs > pongs, 'a pong on the new connection', 2);
    expect(terminal.connections).toBe(2);
  });

  it('past its rate, a ping goes unanswered and the feed stays open', async () => {
    // One command a second, two at once: a flood of pings is not answered frame for frame.
    const server = await startTestServer({ rateLimit: 1 });
    const terminal = await openTerminal(server, KEYS.alice);
    for (let i = 0; i < 200; i += 1) terminal.ws.send('ping');
    await readByServer(terminal.ws);
    expect(terminal.pongs).toBeGreaterThanOrEqual(2);
    expect(terminal.pongs).toBeLessThan(200);
    const post = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'after the flood' });
    expect((await terminal.item(post.id)).text).toBe('after the flood');
    expect(terminal.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('/graphql without format=tree is the GraphQL endpoint: a socket without its subprotocol is closed 4406, never sent tree items', async () => {
    const server = await startTestServer();
    const ws = new WebSocket(`${server.url}/graphql?apiKey=${KEYS.alice}`);
    const messages: string[] = [];
    ws.on('message', (data: Buffer) => messages.push(data.toString()));
    const [code] = await new Promise<[number, string]>((resolve) =>
      ws.once('close', (closeCode, reason) => resolve([closeCode, reason.toString()])),
    );
    expect(code).toBe(4406);
    expect(messages).toEqual([]);
  });
});
