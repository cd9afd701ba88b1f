import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { KeepAliveRound, StreamPostsServer } from '../../src/index.js';
import { KEYS, readByServer, startTestServer } from '../support/harness.js';
import { connectWire, postIds, request, summarize, type WireClient } from '../support/wire.js';
import { RecordingLogger } from '../support/logger.js';
import { tcpSocketOf } from '../support/raw-peer.js';

/**
 * Far longer than any test: no timed round comes while one runs, and every round is one
 * the test asks for (`keepAliveRound()`), so which round did what is exact, whatever the
 * machine's speed.
 */
const NO_TIMED_ROUNDS_MS = 3_600_000;
/** Generous waits (other suites run benchmarks on this machine); never used as a bound. */
const WAIT_MS = 10_000;
const TERMINATING = 'terminating unresponsive peer';

interface Scene {
  server: StreamPostsServer;
  logger: RecordingLogger;
  healthy: WireClient[];
  publisher: WireClient;
  /** Acked ids of the posts published so far, in order. */
  acked: string[];
}

/** A server whose rounds the test drives, three healthy subscribers and a publisher (all answer pings). */
async function scene(): Promise<Scene> {
  const logger = new RecordingLogger();
  const server = await startTestServer({ keepAliveMs: NO_TIMED_ROUNDS_MS, logger });
  const healthy: WireClient[] = [];
  for (const key of [KEYS.alice, KEYS.bob, KEYS.newsdesk]) {
    const client = await connectWire(server, key, { summarize });
    expect((await request(client, 'on-stream-post', { streamIds: 'macro-wire' }, 'sub')).event).toBe('sub_ack');
    healthy.push(client);
  }
  const publisher = await connectWire(server, KEYS.macroWire, { summarize });
  return { server, logger, healthy, publisher, acked: [] };
}

/**
 * One keep-alive round, then a post; resolves once every healthy peer has its ping, its
 * answer has been read by the server, and the post has been acked.
 */
async function round(s: Scene, extra: WireClient[] = []): Promise<KeepAliveRound> {
  const answering = [...s.healthy, s.publisher, ...extra];
  const before = answering.map((client) => client.pings.length);
  const result = await s.server.keepAliveRound();
  for (const [i, client] of answering.entries()) {
    await client.until(() => client.pings.length > before[i]!, "the round's ping", WAIT_MS);
    await readByServer(client.ws);
  }
  const reply = await request(
    s.publisher,
    'add-stream-post',
    { streamId: 'macro-wire', content: `after round ${s.acked.length + 1}`, contentType: 'rawtext' },
    `p${s.acked.length}`,
  );
  expect(reply.event).toBe('ack');
  s.acked.push(String(reply['id']));
  return result;
}

/** Every healthy peer is open, got every post exactly once in order, and a ping every round. */
async function expectHealthyServed(s: Scene, rounds: number): Promise<void> {
  for (const client of s.healthy) {
    const posts = () => postIds(client, 'envelope');
    await client.until(() => posts().length >= s.acked.length, `${s.acked.length} posts`, WAIT_MS);
    expect(posts()).toEqual(s.acked);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    expect(client.pings).toHaveLength(rounds);
    expect(client.received.filter((r) => r.message?.['event'] === 'keep-alive')).toHaveLength(rounds);
  }
  expect(s.publisher.ws.readyState).toBe(WebSocket.OPEN);
  expect((await s.server.state()).connections).toBe(s.healthy.length + 1);
  expect(s.logger.lines.filter((line) => line.message === TERMINATING)).toHaveLength(1);
}

/** The round's counts, the other peers' being the scene's four. */
function others(s: Scene, round: KeepAliveRound, pingedBesides: number, terminated: number): void {
  expect(round).toEqual({ pinged: s.healthy.length + 1 + pingedBesides, terminated });
}

describe('keep-alive against peers that stop answering (PROTOCOL.md B2)', () => {
  it('a peer that never answers gets one ping and is terminated at the next round; healthy peers are untouched', async () => {
    const s = await scene();
    const silent = await connectWire(s.server, KEYS.bob, { wsOptions: { autoPong: false } });
    const conn = s.logger.lastConnectedId();

    others(s, await round(s), 1, 0);
    await silent.until(() => silent.pings.length === 1, 'the first ping', WAIT_MS);
    expect(silent.isClosed).toBe(false);
    others(s, await round(s), 0, 1);
    // Terminated, not closed politely: no close frame reached it.
    expect((await silent.closed).code).toBe(1006);
    expect(s.logger.find(TERMINATING, conn)).toBeDefined();
    others(s, await round(s), 0, 0);

    expect(silent.pings).toHaveLength(1);
    await expectHealthyServed(s, 3);
  });

  it('a peer that stops sending pongs is terminated at the round after the ping it left unanswered', async () => {
    const s = await scene();
    const quitter = await connectWire(s.server, KEYS.alice, { wsOptions: { autoPong: false } });
    const conn = s.logger.lastConnectedId();
    const ANSWERED = 3;
    quitter.ws.on('ping', () => {
      if (quitter.pings.length <= ANSWERED) quitter.ws.pong();
    });

    for (let i = 0; i < ANSWERED; i += 1) {
      // Its pong is read before the next round: readByServer waits for it.
      others(s, await round(s, [quitter]), 1, 0);
    }
    others(s, await round(s), 1, 0);
    await quitter.until(() => quitter.pings.length === ANSWERED + 1, 'the unanswered ping', WAIT_MS);
    expect(quitter.isClosed).toBe(false);
    others(s, await round(s), 0, 1);
    expect((await quitter.closed).code).toBe(1006);
    expect(s.logger.find(TERMINATING, conn)).toBeDefined();

    expect(quitter.pings).toHaveLength(ANSWERED + 1);
    await expectHealthyServed(s, ANSWERED + 2);
  });

  it('a peer that stops reading (paused socket) is terminated at the round after the ping it missed', async () => {
    const s = await scene();
    const stalled = await connectWire(s.server, KEYS.newsdesk);
    expect((await request(stalled, 'on-stream-post', { streamIds: 'macro-wire' }, 'sub')).event).toBe('sub_ack');
    const conn = s.logger.lastConnectedId();
    const ANSWERED = 3;

    for (let i = 0; i < ANSWERED; i += 1) others(s, await round(s, [stalled]), 1, 0);
    // From here on nothing is read: the next ping waits in the socket, unanswered.
    tcpSocketOf(stalled.ws).pause();
    others(s, await round(s), 1, 0);
    others(s, await round(s), 0, 1);
    expect(s.logger.find(TERMINATING, conn)).toBeDefined();
    tcpSocketOf(stalled.ws).resume();
    expect((await stalled.closed).code).toBe(1006);

    // Read once resumed: the one unanswered ping, then the end.
    expect(stalled.pings).toHaveLength(ANSWERED + 1);
    await expectHealthyServed(s, ANSWERED + 2);
  });

  it('a round asked for restarts the interval: the next timed round is a whole interval later', async () => {
    // The peer answers each ping within it, on a loaded machine too.
    const INTERVAL_MS = 1_000;
    const server = await startTestServer({ keepAliveMs: INTERVAL_MS });
    const peer = await connectWire(server, KEYS.alice);
    await peer.until(() => peer.pings.length === 1, 'a timed round', WAIT_MS);
    // Halfway to the next timed round: a round that did not restart the interval would be
    // followed by one half an interval later.
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS / 2));
    const askedAt = performance.now();
    expect(await server.keepAliveRound()).toEqual({ pinged: 1, terminated: 0 });
    await peer.until(() => peer.pings.length === 3, 'the timed round after it', WAIT_MS);
    // A lower bound only: how much later is the machine's business.
    expect(peer.pings[2]! - askedAt).toBeGreaterThanOrEqual(INTERVAL_MS - 2);
    expect(peer.ws.readyState).toBe(WebSocket.OPEN);
  });
});
