import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { ensureBuilt, runToEnd } from '../support/cli.js';
import { expectCleanError, jsonLines } from '../support/cli-output.js';
import { wirePost } from '../support/fixtures.js';
import { scriptedService } from '../support/hostile.js';

ensureBuilt();

const send = (ws: WebSocket, event: string, data: unknown, requestId?: string) =>
  ws.send(JSON.stringify({ event, data, ...(requestId ? { requestId } : {}) }));

/**
 * A service that says `connected` with `extra` in it and acknowledges every post (hidden
 * until its releaseAt, when it has one); `received` gets each post command's data.
 */
function acking(extra: Record<string, unknown>, received: Record<string, unknown>[] = []) {
  return scriptedService((ws) => {
    send(ws, 'connected', { message: 'connected', userId: 'u', streams: ['wire'], streamId: 'wire', ...extra });
    ws.on('message', (raw) => {
      const command = JSON.parse(String(raw));
      if (command.event !== 'add-stream-post') return;
      received.push(command.data);
      const { releaseAt } = command.data as { releaseAt?: string };
      const post = wirePost({ text: command.data.content, ...(releaseAt ? { releaseAt, hidden: true } : {}) });
      send(ws, 'ack', { post, duplicate: false }, command.requestId);
    });
  });
}

const KEY = 'sp_test_key_never_shown';
const postArgs = (url: string, flags: string[]) => [
  'post',
  '--url',
  url,
  '--api-key',
  KEY,
  '--stream',
  'wire',
  ...flags,
];

describe('bounds on what a service states', () => {
  it('a stated rate of 1e-7 posts/s: post --batch ends at once naming the rate, no timer overflows', async () => {
    const received: Record<string, unknown>[] = [];
    const service = await acking({ rateLimit: { perSecond: 1e-7, burst: 1 } }, received);
    const lines = '{"content":"one"}\n{"content":"two"}\n{"content":"three"}\n';
    const result = await runToEnd(postArgs(service.url, ['--batch', '--timeout', '2s']), { stdin: lines });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      'the service states a rate limit of 1e-7 commands per second (connected.rateLimit.perSecond): fewer than one post within 2s',
    );
    expect(result.stderr).not.toContain('TimeoutOverflowWarning');
    expectCleanError(result.stderr, [KEY]);
  });

  it('a stated rate of 1e-7 posts/s: post fails the same way', async () => {
    const service = await acking({ rateLimit: { perSecond: 1e-7, burst: 1 } });
    const result = await runToEnd(postArgs(service.url, ['--timeout', '2s', 'hello']));
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('the service states a rate limit of 1e-7 commands per second');
    expect(result.stderr).not.toContain('TimeoutOverflowWarning');
  });

  it('a rate of one post per --timeout is slow, not refused', async () => {
    const service = await acking({ rateLimit: { perSecond: 0.5, burst: 1 } });
    const result = await runToEnd(postArgs(service.url, ['--timeout', '2s', '--json', 'hello']));
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout)[0].post.text).toBe('hello');
  });

  it('a serverTime at the end of time: ignored (said under -v), --release-at +10m counts from this machine', async () => {
    const received: Record<string, unknown>[] = [];
    const serverTime = '+275760-09-13T00:00:00.000Z';
    const service = await acking({ serverTime }, received);
    const before = Date.now();
    const result = await runToEnd(postArgs(service.url, ['--release-at', '+10m', '-v', '--json', 'later']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain('RangeError');
    expect(result.stderr).toContain(
      `the service's time (connected.serverTime ${serverTime}) is more than 100 years from this machine's clock, and is ignored: --release-at +10m counts from this machine's clock`,
    );
    const releaseAt = Date.parse(received[0]!['releaseAt'] as string);
    expect(releaseAt).toBeGreaterThanOrEqual(before + 10 * 60_000);
    expect(releaseAt).toBeLessThanOrEqual(Date.now() + 10 * 60_000 + 1_000);
    expect(jsonLines(result.stdout)[0].post.text).toBe('later');
  });

  it('a serverTime 200 years back, for post --batch with a relative releaseAt: ignored as well', async () => {
    const received: Record<string, unknown>[] = [];
    const service = await acking({ serverTime: '1826-01-01T00:00:00.000Z' }, received);
    const before = Date.now();
    const result = await runToEnd(postArgs(service.url, ['--batch', '-v']), {
      stdin: '{"content":"later","releaseAt":"+1h"}\n',
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain('RangeError');
    // A line read before `connected` arrives is timed by this machine's clock anyway, so the
    // warning is not asserted here: what matters is that 1826 never times the release.
    expect(Date.parse(received[0]!['releaseAt'] as string)).toBeGreaterThanOrEqual(before + 3_600_000);
  });
});
