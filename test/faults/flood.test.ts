import { describe, expect, it } from 'vitest';
import { AdjustableClock } from '../../src/server/clock.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { MemoryStore } from '../../src/server/stores/memory/memory-store.js';
import type { Store } from '../../src/server/stores/store.js';
import { startServer } from '../../src/server/assemble.js';
import { adminState, afterTest, KEYS, startTestServer } from '../support/harness.js';
import { clientFrame, OPCODE, parseServerBytes, rawConnect, tcpSocketOf, upgradeRequest } from '../support/raw-peer.js';
import { connectWire, request } from '../support/wire.js';

const RATE = 200;
const BURST = 2 * RATE;
const FRAMES = 100_000;

describe('a flood of malformed frames', () => {
  it('is answered within the rate limit, not frame for frame, then closed with 1008; a fresh client still connects', async () => {
    const server = await startTestServer({ rateLimit: RATE });
    const flooder = await connectWire(server, KEYS.alice);
    const frame = clientFrame(OPCODE.text, Buffer.from('{"event":'));
    const startedAt = performance.now();
    tcpSocketOf(flooder.ws).write(Buffer.concat(Array.from({ length: FRAMES }, () => frame)));

    const fresh = await connectWire(server, KEYS.bob);
    expect((await request(fresh, 'on-stream-post', {}, 'fresh')).event).toBe('sub_ack');

    // Past its budget of refusals the flooder is closed (B4), after the answers to what it sent before.
    expect(await flooder.closed).toMatchObject({ code: 1008, reason: 'rate limit exceeded' });
    const seconds = (performance.now() - startedAt) / 1000;
    const errors = flooder.received
      .filter((r) => r.message?.['event'] === 'error')
      .map((r) => (r.message!['data'] as { code: string }).code);
    expect(new Set(errors)).toEqual(new Set(['bad-json', 'rate-limited']));
    // Frames within the rate get `bad-json`; refusals get at most as many replies again.
    expect(errors.length).toBeLessThanOrEqual(2 * (BURST + Math.ceil(seconds * RATE)));
  });
});

describe('commands sent before the key is checked', () => {
  it("still take their share of the key's rate", async () => {
    // Authentication waits a turn of the event loop, so the commands sent with the upgrade
    // request arrive before the server knows the key.
    const memory = new MemoryStore({ seed: DEMO_SEED, clock: new AdjustableClock(), idempotencyWindowMs: 60_000 });
    const store: Store = {
      authenticate: async (key) => {
        await new Promise((resolve) => setImmediate(resolve));
        return memory.authenticate(key);
      },
      user: (id) => memory.user(id),
      stream: (id) => memory.stream(id),
      streamsOf: (userId) => memory.streamsOf(userId),
      streams: () => memory.streams(),
      setCustomTargets: (userId, streamId, targets) => memory.setCustomTargets(userId, streamId, targets),
      publish: (request) => memory.publish(request),
      recent: (streamId, limit) => memory.recent(streamId, limit),
      onEvent: (listener) => memory.onEvent(listener),
      stats: () => memory.stats(),
      reset: () => memory.reset(),
      close: () => memory.close(),
      media: memory.media,
    };
    // A store the library does not take: this one starts the core server itself.
    const server = await startServer({ seed: DEMO_SEED, port: 0, rateLimit: 1000, keyRateLimit: 1, store });
    afterTest(() => server.close());
    const { posts } = await adminState(server);
    const socket = await rawConnect(server);
    const commands = Array.from({ length: 10 }, (_, i) =>
      clientFrame(
        OPCODE.text,
        Buffer.from(
          JSON.stringify({
            event: 'add-stream-post',
            data: { streamId: 'macro-wire', content: `early ${i}`, contentType: 'rawtext' },
            requestId: `e${i}`,
          }),
        ),
      ),
    );
    const startedAt = performance.now();
    socket.write(Buffer.concat([Buffer.from(upgradeRequest(server, KEYS.macroWire)), ...commands]));
    const replies = await new Promise<{ event: string; data: { code?: string } }[]>((resolve) => {
      let bytes = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        bytes = Buffer.concat([bytes, chunk]);
        const answered = parseServerBytes(bytes)
          .frames.map((frame) => JSON.parse(frame.payload.toString('utf8')))
          .filter((message) => typeof message.requestId === 'string');
        if (answered.length === commands.length) resolve(answered);
      });
    });
    const refill = Math.ceil((performance.now() - startedAt) / 1000);
    const acks = replies.filter((reply) => reply.event === 'ack').length;
    expect(acks).toBeLessThanOrEqual(2 + refill);
    expect(replies.filter((reply) => reply.event !== 'ack').map((reply) => reply.data.code)).toEqual(
      Array(10 - acks).fill('rate-limited'),
    );
    expect((await adminState(server)).posts).toBe(posts + acks);
  });
});
