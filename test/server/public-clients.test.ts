import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { Arrivals } from '../support/arrivals.js';
import {
  adminState,
  advanceClock,
  afterTest,
  connectAs,
  http,
  KEYS,
  restPublish,
  startTestServer,
} from '../support/harness.js';

/**
 * Clients written as the hosted service's public clients behave (PROTOCOL.md B1a), pointed
 * at `serve` with only the URL changed. None asks for our dialect: they know nothing of it.
 */

/** Events such bots know to be no news; everything else that has `data` they forward. */
const SYSTEM_EVENTS = new Set(['sub_ack', 'ack', 'keep-alive']);

/**
 * A bot on the URL form: it forwards every message that has `data` and is not a system
 * event as news, reading `data.text` with string operations (a regex for cashtags, a trim).
 */
class NewsBot {
  /** What it forwarded to its channel: one line per message it took for news. */
  readonly forwarded: { event: string; id: unknown; text: string; tickers: string[] }[] = [];
  /** Every event name it saw, in order. */
  readonly events: string[] = [];
  /** What would have crashed such a bot: a non-string `text`, an unparseable frame. */
  readonly crashes: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #arrivals = new Arrivals();

  constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      this.#take(raw.toString());
      this.#arrivals.notify();
    });
    ws.on('error', () => {});
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.#arrivals.notify();
      }),
    );
  }

  static async open(server: StreamPostsServer, key: string, query: string): Promise<NewsBot> {
    const bot = new NewsBot(
      new WebSocket(`${server.url}/v1/ws/on-stream-post?apiKey=${encodeURIComponent(key)}&${query}`),
    );
    afterTest(() => bot.ws.terminate());
    await bot.until(() => bot.events.includes('sub_ack'), 'its sub_ack');
    return bot;
  }

  #take(raw: string): void {
    let message: any;
    try {
      message = JSON.parse(raw);
    } catch {
      this.crashes.push(`not JSON: ${raw.slice(0, 80)}`);
      return;
    }
    this.events.push(String(message.event));
    if (message.data === undefined || SYSTEM_EVENTS.has(message.event)) return;
    const text: unknown = message.data.text;
    if (typeof text !== 'string') {
      this.crashes.push(`${message.event}: data.text is ${text === null ? 'null' : typeof text}`);
      return;
    }
    this.forwarded.push({
      event: message.event,
      id: message.data.id,
      text: text.trim(),
      tickers: [...text.matchAll(/\$([A-Z]{2,6})\b/g)].map((match) => match[1]!),
    });
  }

  async until(ready: () => boolean, what: string): Promise<void> {
    await this.#arrivals.until(
      ready,
      5000,
      () => new Error(`the bot never saw ${what}; events ${JSON.stringify(this.events)}`),
    );
  }

  async forwardedPost(id: string): Promise<(typeof this.forwarded)[number]> {
    await this.until(() => this.forwarded.some((item) => item.id === id), `post ${id}`);
    return this.forwarded.find((item) => item.id === id)!;
  }
}

describe('a URL-form bot that forwards every message that is not a system event', () => {
  it('sees nothing but sub_ack, keep-alive and posts; a hidden post once, at its release, with its text', async () => {
    const server = await startTestServer();
    const bot = await NewsBot.open(server, KEYS.alice, 'streamIds=macro-wire');
    // No greeting: the sub_ack is the first word.
    expect(bot.events[0]).toBe('sub_ack');

    const plain = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'Payrolls +250k $SPY' });
    expect(await bot.forwardedPost(plain.id)).toEqual({
      event: 'stream.post.created',
      id: plain.id,
      text: 'Payrolls +250k $SPY',
      tickers: ['SPY'],
    });

    const { now } = await adminState(server);
    const hidden = await restPublish(server, KEYS.macroWire, 'macro-wire', {
      content: 'CPI 3.1% $TLT',
      releaseAt: new Date(Date.parse(now) + 60_000).toISOString(),
    });
    const meanwhile = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'while it is hidden' });
    await bot.forwardedPost(meanwhile.id);
    // A keep-alive round (asked for, not waited for): the bot ignores its envelope.
    await server.keepAliveRound();
    await bot.until(() => bot.events.includes('keep-alive'), 'a keep-alive');
    await advanceClock(server, 120_000);
    expect(await bot.forwardedPost(hidden.id)).toEqual({
      event: 'stream.post.created',
      id: hidden.id,
      text: 'CPI 3.1% $TLT',
      tickers: ['TLT'],
    });

    expect(bot.crashes).toEqual([]);
    expect(new Set(bot.events)).toEqual(new Set(['sub_ack', 'keep-alive', 'stream.post.created']));
    expect(bot.forwarded.map((item) => item.id)).toEqual([plain.id, meanwhile.id, hidden.id]);
  });

  it('with --hosted-hidden-posts push, the same bot meets the hidden post as a null text: the mode an author tests against', async () => {
    const server = await startTestServer({ hostedHiddenPosts: 'push' });
    const bot = await NewsBot.open(server, KEYS.alice, 'streamIds=macro-wire');
    const { now } = await adminState(server);
    const hidden = await restPublish(server, KEYS.macroWire, 'macro-wire', {
      content: 'embargoed',
      releaseAt: new Date(Date.parse(now) + 60_000).toISOString(),
    });
    await bot.until(() => bot.crashes.length > 0, 'the hidden post');
    expect(bot.crashes).toEqual(['stream.post.created: data.text is null']);
    await advanceClock(server, 120_000);
    await bot.until(() => bot.events.includes('stream.post.released'), 'the release');
    expect(bot.forwarded).toEqual([{ event: 'stream.post.released', id: hidden.id, text: 'embargoed', tickers: [] }]);
  });

  it('history: recent posts first, then live ones, no greeting before the sub_ack', async () => {
    const server = await startTestServer();
    const recent: { id: string }[] = (
      await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=2', { key: KEYS.alice })
    ).body.posts;
    expect(recent.length).toBeGreaterThan(0);
    const bot = await NewsBot.open(server, KEYS.alice, 'streamIds=macro-wire&lastPosts=2');
    await bot.until(() => bot.forwarded.length === recent.length, 'the history');
    const live = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'live after history' });
    await bot.forwardedPost(live.id);
    expect(bot.forwarded.map((item) => item.id)).toEqual([...recent.map((post) => post.id).reverse(), live.id]);
    expect(bot.events.slice(0, 1)).toEqual(['sub_ack']);
    expect(bot.crashes).toEqual([]);
  });

  it('a bot that sends an unknown frame after connecting keeps its feed', async () => {
    const server = await startTestServer();
    const bot = await NewsBot.open(server, KEYS.alice, 'streamIds=macro-wire');
    bot.ws.send(JSON.stringify({ event: 'ping', data: {} }));
    bot.ws.send('hello');
    await bot.until(() => bot.events.filter((event) => event === 'error').length === 2, 'the two refusals');
    const post = await restPublish(server, KEYS.macroWire, 'macro-wire', { content: 'still delivered' });
    expect((await bot.forwardedPost(post.id)).text).toBe('still delivered');
    // The refusals are error envelopes with data: such a bot forwards them as news, which is
    // what it did against the hosted service too (its own frame was the mistake).
    expect(bot.ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('a publisher on the bare /v1/ws, written for the hosted service', () => {
  /**
   * It waits, with no timeout, for a first message and reads its `data.message`; a message
   * containing `Invalid secret key` means refused. Then it publishes without `contentType`,
   * with an `id` of its own and a numeric `createdAt`, and waits for the ack.
   */
  async function publishAsPublicClient(
    server: StreamPostsServer,
    key: string,
    content: string,
  ): Promise<{ greeting: string; reply: any }> {
    const ws = new WebSocket(`${server.url}/v1/ws?apiKey=${encodeURIComponent(key)}`);
    afterTest(() => ws.terminate());
    const messages: any[] = [];
    const arrivals = new Arrivals();
    ws.on('message', (raw) => {
      messages.push(JSON.parse(raw.toString()));
      arrivals.notify();
    });
    ws.on('close', () => arrivals.notify());
    await arrivals.until(
      () => messages.length > 0,
      5000,
      () => new Error('no first message'),
    );
    const greeting = String(messages[0].data?.message);
    if (greeting.includes('Invalid secret key')) return { greeting, reply: undefined };
    ws.send(
      JSON.stringify({
        event: 'add-stream-post',
        data: { id: `client-${Date.now()}`, streamId: 'macro-wire', content, createdAt: Date.now() },
      }),
    );
    await arrivals.until(
      () => messages.length > 1,
      5000,
      () => new Error(`no reply; got ${JSON.stringify(messages)}`),
    );
    return { greeting, reply: messages[1] };
  }

  it('reads the greeting, publishes without contentType and with extra fields, and subscribers get a rawtext post', async () => {
    const server = await startTestServer();
    const reader = await connectAs(server, KEYS.alice);
    await reader.request('on-stream-post', { streamIds: 'macro-wire' });
    const { greeting, reply } = await publishAsPublicClient(server, KEYS.macroWire, 'from a public publisher');
    expect(greeting).toBe('connected');
    expect(reply).toMatchObject({
      event: 'ack',
      data: { duplicate: false, post: { text: 'from a public publisher', contentType: 'rawtext' } },
    });
    // Our id and createdAt, not the client's.
    expect(reply.data.post.id).not.toMatch(/^client-/);
    expect(await reader.nextEvent('stream.post.created')).toMatchObject({
      data: { id: reply.data.post.id, text: 'from a public publisher', contentType: 'rawtext' },
    });
  });

  it('is told "Invalid secret key" in the first message for a wrong key', async () => {
    const server = await startTestServer();
    const { greeting, reply } = await publishAsPublicClient(server, 'sp_wrong_key_1234', 'never sent');
    expect(greeting).toBe('Invalid secret key');
    expect(reply).toBeUndefined();
  });
});
