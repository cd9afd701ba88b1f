import { describe, expect, it } from 'vitest';
import { MAX_CONTENT_BYTES, MAX_TREE_SUGGESTIONS } from '../../src/protocol/limits.js';
import { parseSeed } from '../../src/server/service/seed.js';
import { adminState, startTestServer, TEST_STORE } from '../support/harness.js';
import { connectWire, postIds, request, summarize, type WireClient } from '../support/wire.js';
import { tcpSocketOf } from '../support/raw-peer.js';

const KiB = 1024;
const STREAMS = 10;
const POSTS_PER_STREAM = 100;
/** Far below the 64 MiB of history each reader asks for: only flow control gets it through. */
const MAX_BUFFERED = 1024 * KiB;
const WAIT_MS = 120_000;
const READER_KEY = 'sp_test_history_reader';
const OWNER_KEY = (s: number) => `sp_test_history_stream_${s}`;

/** A legal post of exactly 64 KiB, full of distinct cashtags (the worst case for a tree item). */
function bigContent(stream: number, index: number): string {
  const head = `s${stream} p${index} `;
  let text = head;
  for (let coin = 0; text.length < MAX_CONTENT_BYTES - 8; coin += 1) text += `$C${coin.toString(36).toUpperCase()} `;
  return text.slice(0, MAX_CONTENT_BYTES);
}

const seed = parseSeed({
  users: [
    {
      id: 'reader',
      name: 'Reader',
      readerKey: READER_KEY,
      follows: Array.from({ length: STREAMS }, (_, s) => `s${s}`),
    },
    { id: 'owner', name: 'Owner', readerKey: 'sp_test_history_owner', follows: [] },
  ],
  streams: Array.from({ length: STREAMS }, (_, s) => ({
    id: `s${s}`,
    name: `Stream ${s}`,
    owner: 'owner',
    key: OWNER_KEY(s),
  })),
  posts: Array.from({ length: STREAMS * POSTS_PER_STREAM }, (_, i) => ({
    streamId: `s${i % STREAMS}`,
    content: bigContent(i % STREAMS, Math.floor(i / STREAMS)),
    contentType: 'rawtext' as const,
  })),
});

describe('history under flow control', () => {
  it('delivers 10 streams x 100 posts x 64 KiB of history, then live posts, to readers of both formats with a 1 MiB limit', async () => {
    const server = await startTestServer({ seed, maxBufferedBytes: MAX_BUFFERED });
    const readers = await Promise.all([
      connectWire(server, READER_KEY, { summarize }),
      connectWire(server, READER_KEY, { summarize }),
    ]);
    const [envelope, tree] = readers as [WireClient, WireClient];
    expect((await request(envelope, 'on-stream-post', { lastPosts: POSTS_PER_STREAM }, 'e')).event).toBe('sub_ack');
    expect((await request(tree, 'on-stream-post-tree', { lastPosts: POSTS_PER_STREAM }, 't')).event).toBe('sub_ack');

    // A live post published while the history is still on its way comes after all of it.
    const publisher = await connectWire(server, OWNER_KEY(0));
    const live = await request(
      publisher,
      'add-stream-post',
      { streamId: 's0', content: 'live', contentType: 'rawtext' },
      'live',
    );
    const liveId = (live['data'] as { post: { id: string } }).post.id;

    const total = STREAMS * POSTS_PER_STREAM;
    for (const [client, isTree] of [
      [envelope, false],
      [tree, true],
    ] as const) {
      await client.until(
        () => postIds(client, isTree ? 'tree' : 'envelope').length === total + 1,
        `${total} history posts and the live one`,
        WAIT_MS,
      );
      const posts = client.received.filter((r) =>
        isTree ? r.message?.['event'] === undefined : r.message?.['event'] === 'stream.post.created',
      );
      expect(posts.at(-1)!.message!['id']).toBe(liveId);
      expect(client.isClosed).toBe(false);
    }
    // A tree item of a post full of cashtags lists a bounded number of them.
    const treeItems = tree.received.filter((r) => r.message?.['event'] === undefined);
    expect(Math.max(...treeItems.map((r) => Number(r.message!['suggestions'] ?? 0)))).toBe(MAX_TREE_SUGGESTIONS);
    // 128 MiB through flow control (10 s on a Redis store with the suite's other files running): a
    // guard against a hang, not a bound on speed.
  }, 60_000);

  it('still closes a reader that stops reading with 1013 once live posts pile up behind its history', async () => {
    const server = await startTestServer({ seed, maxBufferedBytes: MAX_BUFFERED });
    const stopped = await connectWire(server, READER_KEY, { summarize });
    expect((await request(stopped, 'on-stream-post', { lastPosts: POSTS_PER_STREAM }, 'h')).event).toBe('sub_ack');
    const { subscriptions } = await adminState(server);
    tcpSocketOf(stopped.ws).pause();

    const publisher = await connectWire(server, OWNER_KEY(1));
    const content = bigContent(1, -1);
    // Each live post waits behind the history; past 1 MiB of them the reader is a slow consumer.
    let closed = false;
    for (let i = 0; i < 40; i += 1) {
      const reply = await request(
        publisher,
        'add-stream-post',
        { streamId: 's1', content, contentType: 'rawtext' },
        `p${i}`,
      );
      expect(reply['event']).toBe('ack');
      // It reads again as soon as it is closed, within the server's grace for reading the close frame.
      if (!closed && (await adminState(server)).subscriptions === subscriptions - 1) {
        closed = true;
        tcpSocketOf(stopped.ws).resume();
      }
    }
    expect(closed).toBe(true);
    expect((await stopped.closed).code).toBe(1013);
  });
});

describe('histories asked for again and again by a reader that does not read', () => {
  // Memory only: 200 histories of 64 MiB are 12.8 GB read from Redis, where the memory store shares its posts.
  it.skipIf(TEST_STORE !== 'memory')(
    'count against the slow-consumer limit: the reader is closed with 1013, not queued without end',
    async () => {
      const server = await startTestServer({ seed, maxBufferedBytes: MAX_BUFFERED });
      const stopped = await connectWire(server, READER_KEY, { summarize });
      tcpSocketOf(stopped.ws).pause();
      // Each asks for the same 1,000 posts again (replacing the subscription, not adding one).
      for (let i = 0; i < 200; i += 1)
        stopped.send(
          JSON.stringify({ event: 'on-stream-post', data: { lastPosts: POSTS_PER_STREAM }, requestId: `again${i}` }),
        );
      tcpSocketOf(stopped.ws).resume();
      expect((await stopped.closed).code).toBe(1013);
    },
  );
});
