import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StreamPostsServer } from '../../src/index.js';
import { KEYS, startTestServer } from '../support/harness.js';
import { connectWire, RecordingLogger, request, sleep, tcpSocketOf, type WireClient } from './helpers.js';

/** The keep-alive interval the server is started with. */
const INTERVAL_MS = 250;
/**
 * Allowance for timer lateness and loopback delivery on a loaded machine: a
 * fifth of the interval. A server that lets a peer live one ping round too
 * long is late by a whole interval, far beyond it.
 */
const SCHEDULING_SLACK_MS = 50;
/** Generous waits (other suites run benchmarks on this machine); never used as a bound. */
const WAIT_MS = 20 * INTERVAL_MS;
const TERMINATING = 'terminating unresponsive peer';

interface Scene {
  server: StreamPostsServer;
  logger: RecordingLogger;
  healthy: WireClient[];
  publisher: WireClient;
}

/** Keeps only what the checks need, so posts are not held whole. */
function summarize(message: Record<string, unknown>): Record<string, unknown> {
  const data = message['data'] as { id?: unknown; post?: { id?: unknown } } | undefined;
  return { event: message['event'], requestId: message['requestId'], id: data?.id ?? data?.post?.id };
}

/** A server with a short keep-alive, three healthy subscribers and a publisher (all answer pings). */
async function scene(): Promise<Scene> {
  const logger = new RecordingLogger();
  const server = await startTestServer({ keepAliveMs: INTERVAL_MS, logger });
  const healthy: WireClient[] = [];
  for (const key of [KEYS.alice, KEYS.bob, KEYS.newsdesk]) {
    const client = await connectWire(server, key, { summarize });
    expect((await request(client, 'on-stream-post', { streamIds: 'macro-wire' }, 'sub')).event).toBe('sub_ack');
    healthy.push(client);
  }
  const publisher = await connectWire(server, KEYS.macroWire, { summarize });
  return { server, logger, healthy, publisher };
}

/** Publishes a post every fifth of an interval until stopped; resolves with the acked ids in order. */
function keepPublishing(publisher: WireClient): { stop: () => Promise<string[]> } {
  const ids: string[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i += 1) {
      const reply = await request(
        publisher,
        'add-stream-post',
        { streamId: 'macro-wire', content: `tick ${i}`, contentType: 'rawtext' },
        `p${i}`,
      );
      expect(reply.event).toBe('ack');
      ids.push(String(reply['id']));
      await sleep(INTERVAL_MS / 5);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return ids;
    },
  };
}

/** Every healthy peer is open, got every post exactly once in order, and saw several ping rounds. */
async function expectHealthyServed(scene: Scene, acked: string[]): Promise<void> {
  expect(acked.length).toBeGreaterThan(5);
  for (const client of scene.healthy) {
    const posts = () =>
      client.received
        .filter((r) => r.message?.['event'] === 'stream.post.created')
        .map((r) => String(r.message!['id']));
    await client.until(() => posts().length >= acked.length, `${acked.length} posts`, WAIT_MS);
    expect(posts()).toEqual(acked);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    expect(client.pings.length).toBeGreaterThanOrEqual(3);
  }
  expect(scene.publisher.ws.readyState).toBe(WebSocket.OPEN);
  expect((await scene.server.state()).connections).toBe(scene.healthy.length + 1);
  expect(scene.logger.lines.filter((line) => line.message === TERMINATING)).toHaveLength(1);
}

/** When the server logged terminating this connection; waits for it. */
async function terminatedAt(scene: Scene, conn: string): Promise<number> {
  const deadline = performance.now() + WAIT_MS;
  for (;;) {
    const line = scene.logger.find(TERMINATING, conn);
    if (line) return line.at;
    if (performance.now() > deadline) throw new Error(`the server did not terminate ${conn} within ${WAIT_MS} ms`);
    await sleep(10);
  }
}

describe('keep-alive against peers that stop answering', () => {
  it('a peer that never answers gets one ping and is terminated at the next round; healthy peers are untouched', async () => {
    const s = await scene();
    const publishing = keepPublishing(s.publisher);
    const silent = await connectWire(s.server, KEYS.bob, { wsOptions: { autoPong: false } });
    const conn = s.logger.lastConnectedId();

    const end = await Promise.race([
      silent.closed,
      sleep(WAIT_MS).then(() => {
        throw new Error(`a silent peer was still open after ${WAIT_MS} ms`);
      }),
    ]);
    const killedAt = await terminatedAt(s, conn);
    await sleep(2 * INTERVAL_MS);
    await expectHealthyServed(s, await publishing.stop());

    // Terminated, not closed politely: no close frame reached it.
    expect(end.code).toBe(1006);
    // PROTOCOL.md B2: "terminates a peer that has not answered the previous one" —
    // the round after its first unanswered ping, so it saw exactly one ping.
    expect(silent.pings).toHaveLength(1);
    const sinceUnanswered = killedAt - silent.pings[0]!;
    expect(
      sinceUnanswered,
      `terminated ${sinceUnanswered.toFixed(0)} ms after its unanswered ping`,
    ).toBeLessThanOrEqual(INTERVAL_MS + SCHEDULING_SLACK_MS);
  });

  it('a peer that stops sending pongs is terminated within one keep-alive interval of the ping it left unanswered', async () => {
    const s = await scene();
    const publishing = keepPublishing(s.publisher);
    const quitter = await connectWire(s.server, KEYS.alice, { wsOptions: { autoPong: false } });
    const conn = s.logger.lastConnectedId();
    const ANSWERED = 3;
    let lastAnsweredAt = 0;
    const answer = () => {
      quitter.ws.pong();
      lastAnsweredAt = quitter.pings.at(-1)!;
      if (quitter.pings.length === ANSWERED) quitter.ws.off('ping', answer);
    };
    quitter.ws.on('ping', answer);

    const killedAt = await terminatedAt(s, conn);
    await quitter.closed;
    await sleep(2 * INTERVAL_MS);
    await expectHealthyServed(s, await publishing.stop());

    expect(lastAnsweredAt).toBeGreaterThan(0);
    // Terminated within one keep-alive interval of the first ping it left unanswered
    // (PROTOCOL.md B2: at the next round).
    expect(quitter.pings).toHaveLength(ANSWERED + 1);
    const sinceUnanswered = killedAt - quitter.pings[ANSWERED]!;
    expect(
      sinceUnanswered,
      `terminated ${sinceUnanswered.toFixed(0)} ms after its unanswered ping`,
    ).toBeLessThanOrEqual(INTERVAL_MS + SCHEDULING_SLACK_MS);
    // So at most two rounds after its last sign of life: pings every interval cannot tell sooner.
    const sinceAnswered = killedAt - lastAnsweredAt;
    expect(sinceAnswered, `terminated ${sinceAnswered.toFixed(0)} ms after its last answered ping`).toBeLessThanOrEqual(
      2 * INTERVAL_MS + SCHEDULING_SLACK_MS,
    );
  });

  it('a peer that stops reading (paused socket) is terminated within one keep-alive interval of the ping it missed', async () => {
    const s = await scene();
    const publishing = keepPublishing(s.publisher);
    const stalled = await connectWire(s.server, KEYS.newsdesk);
    expect((await request(stalled, 'on-stream-post', { streamIds: 'macro-wire' }, 'sub')).event).toBe('sub_ack');
    const conn = s.logger.lastConnectedId();
    const ANSWERED = 3;
    // autoPong has already answered when 'ping' is emitted; from then on nothing is read.
    stalled.ws.on('ping', () => {
      if (stalled.pings.length === ANSWERED) tcpSocketOf(stalled.ws).pause();
    });

    const killedAt = await terminatedAt(s, conn);
    const lastAnsweredAt = stalled.pings[ANSWERED - 1]!;
    tcpSocketOf(stalled.ws).resume();
    expect((await stalled.closed).code).toBe(1006);
    await sleep(2 * INTERVAL_MS);
    await expectHealthyServed(s, await publishing.stop());

    // Read once resumed: the one unanswered ping of the next round, then the end.
    expect(stalled.pings).toHaveLength(ANSWERED + 1);
    const sinceAnswered = killedAt - lastAnsweredAt;
    // The paused peer cannot time the ping it missed; the server sent it one interval after the
    // last answered one. Within one interval of that ping (PROTOCOL.md B2: at the next round),
    // so at most two rounds after its last sign of life.
    expect(sinceAnswered, `terminated ${sinceAnswered.toFixed(0)} ms after its last answered ping`).toBeLessThanOrEqual(
      2 * INTERVAL_MS + SCHEDULING_SLACK_MS,
    );
  });
});
