import type { Socket } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminState, KEYS, SEVERAL_INSTANCES, startTestServer } from '../support/harness.js';
import { until } from '../support/poll.js';
import {
  clientFrame,
  OPCODE,
  parseServerBytes,
  rawConnect,
  readAll,
  serverSideSocket,
  tcpSocketOf,
  upgradeRequest,
} from '../support/raw-peer.js';
import { connectWire, postIds, request, summarize, type WireClient } from '../support/wire.js';
import { RecordingLogger } from '../support/logger.js';

const KiB = 1024;
const MiB = 1024 * KiB;
// A healthy reader in this same process falls behind by part of a window; tree items carry
// the content twice (`body` and `en`), so the limit is twice what envelope-sized frames needed.
const MAX_BUFFERED = 256 * KiB;
const CONTENT_BYTES = 16 * KiB;
/** 3,200 posts of 16 KiB: 50 MiB published, delivered to each healthy subscriber. */
const POSTS = 3200;
/** Publishes in flight at once on the publisher's connection. */
const WINDOW = 32;
/**
 * The largest frame: a tree item carries the content twice (`body` and `en`), plus well
 * under 1 KiB of fields, quoting and frame header.
 */
const ONE_FRAME = 2 * CONTENT_BYTES + KiB;
/** Generous waits (other suites run benchmarks on this machine); never used as a bound. */
const WAIT_MS = 60_000;
const SLOW_CLOSE = 'closing slow consumer';

/** The process's retained heap and off-heap (Buffer) bytes after a full collection. */
function retainedBytes(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

describe('a subscriber that never reads', () => {
  it('is closed with 1013 past maxBufferedBytes, its queue stays bounded, and healthy subscribers get all 50 MiB once, in order', async ({
    skip,
  }) => {
    skip(
      SEVERAL_INSTANCES,
      "watches the server's own sockets (in this process, by port) and one instance's connection ids",
    );
    const logger = new RecordingLogger();
    const server = await startTestServer({ maxBufferedBytes: MAX_BUFFERED, logger });

    // Healthy subscribers: both formats, different users and stream selections.
    const healthy: { client: WireClient; format: 'envelope' | 'tree' }[] = [];
    for (const [key, event, streamIds] of [
      [KEYS.alice, 'on-stream-post', ''],
      [KEYS.bob, 'on-stream-post', 'macro-wire'],
      [KEYS.newsdesk, 'on-stream-post-tree', 'macro-wire'],
    ] as const) {
      const client = await connectWire(server, key, { summarize });
      expect((await request(client, event, { streamIds }, 'sub')).event).toBe('sub_ack');
      healthy.push({ client, format: event === 'on-stream-post' ? 'envelope' : 'tree' });
    }

    // Slow peer 1: a ws client holding two subscriptions (two frames per post), paused.
    const slowWs = await connectWire(server, KEYS.alice, { summarize });
    const slowWsConn = logger.lastConnectedId();
    expect((await request(slowWs, 'on-stream-post', { streamIds: 'macro-wire' }, 'sub1')).event).toBe('sub_ack');
    expect((await request(slowWs, 'on-stream-post-tree', { streamIds: 'macro-wire' }, 'sub2')).event).toBe('sub_ack');
    const slowWsTcp = tcpSocketOf(slowWs.ws);
    slowWsTcp.pause();

    // Slow peer 2: a hand-made handshake and subscribe on a raw socket that is never read.
    const before = await adminState(server);
    const raw = await rawConnect(server);
    raw.write(upgradeRequest(server, KEYS.bob));
    const subscribe = { event: 'on-stream-post', data: { streamIds: 'macro-wire' }, requestId: 'raw' };
    raw.write(clientFrame(OPCODE.text, Buffer.from(JSON.stringify(subscribe))));
    await until(
      async () => (await adminState(server)).subscriptions === before.subscriptions + 1,
      'the raw peer to subscribe',
      WAIT_MS,
    );
    const rawConn = logger.lastConnectedId();

    const serverSide = new Map<string, Socket>([
      [slowWsConn, serverSideSocket(server, slowWsTcp)],
      [rawConn, serverSideSocket(server, raw)],
    ]);
    const publisher = await connectWire(server, KEYS.macroWire, { summarize });
    const acked: string[] = [];

    // Sampled right after each post's fan-out (the server logs `published` once the ack is written).
    const maxQueued = new Map<string, number>([...serverSide.keys()].map((conn) => [conn, 0]));
    const closedAfter = new Map<string, number>();
    let published = 0;
    logger.onLine((line) => {
      if (line.message === 'published') {
        published += 1;
        for (const [conn, socket] of serverSide)
          maxQueued.set(conn, Math.max(maxQueued.get(conn)!, socket.writableLength));
      }
      if (line.message === SLOW_CLOSE && typeof line.fields['conn'] === 'string') {
        closedAfter.set(line.fields['conn'], published);
        // The ws peer starts reading the moment the server gives up on it, so it can see the close frame.
        if (line.fields['conn'] === slowWsConn) slowWsTcp.resume();
      }
    });

    const baseline = retainedBytes();
    const padding = 'x'.repeat(CONTENT_BYTES - 8);
    for (let start = 0; start < POSTS; start += WINDOW) {
      const from = publisher.received.length;
      for (let i = start; i < start + WINDOW; i += 1) {
        const content = `${String(i).padStart(7, '0')} ${padding}`;
        const data = { streamId: 'macro-wire', content, contentType: 'rawtext' };
        publisher.send(JSON.stringify({ event: 'add-stream-post', data, requestId: `p${i}` }));
      }
      await publisher.waitFor(
        (m) => m['requestId'] === `p${start + WINDOW - 1}`,
        `ack p${start + WINDOW - 1}`,
        WAIT_MS,
        from,
      );
      const replies = publisher.received.slice(from).filter((r) => r.message?.['requestId'] !== undefined);
      expect(replies.map((r) => [r.message!['event'], r.message!['requestId']])).toEqual(
        Array.from({ length: WINDOW }, (_, k) => ['ack', `p${start + k}`]),
      );
      acked.push(...replies.map((r) => String(r.message!['id'])));
    }
    const grown = retainedBytes() - baseline;

    // Every healthy subscriber: every post, once, in publish order.
    for (const { client, format } of healthy) {
      await client.until(() => postIds(client, format).length >= POSTS, `${POSTS} posts`, WAIT_MS);
      expect(postIds(client, format)).toEqual(acked);
      expect(client.ws.readyState).toBe(WebSocket.OPEN);
    }

    // Both slow peers were given up on early, and publishing went on long after.
    expect([...closedAfter.keys()].sort()).toEqual([rawConn, slowWsConn].sort());
    for (const after of closedAfter.values()) expect(after).toBeLessThan(POSTS / 10);

    // Their server-side queues never held more than the limit plus the one frame that crossed it.
    const logged = logger.lines
      .filter((line) => line.message === SLOW_CLOSE)
      .map((line) => Number(line.fields['bufferedBytes']));
    for (const bytes of logged) {
      expect(bytes).toBeGreaterThan(MAX_BUFFERED);
      expect(bytes).toBeLessThanOrEqual(MAX_BUFFERED + ONE_FRAME);
    }
    for (const queued of maxQueued.values()) expect(queued).toBeLessThanOrEqual(MAX_BUFFERED + ONE_FRAME);
    // And the process did not keep the 50 MiB for them: what stays (history of 100 posts, its cached
    // frames, logs, ids: about 10 MiB) is far below what one unbounded queue would hold (over 45 MiB).
    expect(grown, `retained ${(grown / MiB).toFixed(1)} MiB more after publishing`).toBeLessThan(20 * MiB);

    // The ws peer, reading again, sees a prefix of the posts in each format, then 1013.
    expect((await slowWs.closed).code).toBe(1013);
    for (const format of ['envelope', 'tree'] as const) {
      const got = postIds(slowWs, format);
      expect(got.length).toBeLessThan(POSTS);
      expect(got).toEqual(acked.slice(0, got.length));
    }

    // The server let go of both sockets: the raw one is ended without being read.
    await new Promise<void>((resolve) => {
      const dropped = () => [rawConn, slowWsConn].every((conn) => logger.find('disconnected', conn) !== undefined);
      if (dropped()) resolve();
      else logger.onLine(() => dropped() && resolve());
    });
    expect((await server.state()).connections).toBe(healthy.length + 1);
    for (const socket of serverSide.values()) expect(socket.destroyed).toBe(true);
    const { bytes, ended } = await readAll(raw, WAIT_MS);
    expect(ended).toBe(true);
    const { head, frames } = parseServerBytes(bytes);
    expect(head).toMatch(/^HTTP\/1\.1 101 /);
    const texts = frames
      .filter((frame) => frame.opcode === OPCODE.text)
      .map((frame) => JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>);
    expect(texts.slice(0, 2).map((m) => [m['event'], m['requestId']])).toEqual([
      ['connected', undefined],
      ['sub_ack', 'raw'],
    ]);
    const rawIds = texts.slice(2).map((m) => {
      expect(m['event']).toBe('stream.post.created');
      return String((m['data'] as { id: unknown }).id);
    });
    expect(rawIds.length).toBeLessThan(POSTS);
    expect(rawIds).toEqual(acked.slice(0, rawIds.length));
    const closes = frames.filter((frame) => frame.opcode === OPCODE.close);
    // Its close frame was queued behind data it never read; if it got through, it says 1013.
    for (const close of closes) expect(close.payload.readUInt16BE(0)).toBe(1013);
    expect(frames.slice(frames.length - closes.length).every((frame) => frame.opcode === OPCODE.close)).toBe(true);

    // Still serving: a new subscriber gets a new post, as do the healthy ones.
    const fresh = await connectWire(server, KEYS.bob, { summarize });
    expect((await request(fresh, 'on-stream-post', { streamIds: 'macro-wire' }, 'late')).event).toBe('sub_ack');
    const last = await request(
      publisher,
      'add-stream-post',
      { streamId: 'macro-wire', content: 'after', contentType: 'rawtext' },
      'last',
    );
    expect(last.event).toBe('ack');
    for (const client of [fresh, ...healthy.map((h) => h.client)]) {
      await client.waitFor((m) => m['id'] === last['id'], 'the last post', WAIT_MS);
    }
  }, 120_000);
});
