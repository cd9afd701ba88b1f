import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadUrl } from '../support/ports.js';
import { connect } from '../../src/api/client.js';
import { RedisServer } from '../support/redis-server.js';
import { ensureBuilt } from '../support/cli.js';
import { expectCleanError, jsonLines, subscribedInProcess } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { KEYS } from '../support/harness.js';
import { startServe, type Serve } from '../support/serve.js';

let redis: RedisServer;
let keyspaces = 0;

beforeAll(async () => {
  ensureBuilt();
  redis = await RedisServer.start();
});
afterAll(() => redis.stop());

/** Three `serve` instances on one Redis keyspace: one service at three addresses. */
async function threeInstances(): Promise<[Serve, Serve, Serve]> {
  const args = ['--store', redis.url, '--redis-prefix', `e2e-failover${++keyspaces}:`, '--rate-limit', '0'];
  const first = await startServe(args);
  return [first, await startServe(args), await startServe(args)];
}

const lineCount = (stdout: string) => stdout.split('\n').length - 1;

describe('listen with several --url', () => {
  it('an instance killed mid-stream: listen goes on at another, and every post published is printed exactly once', async () => {
    const [a, b, c] = await threeInstances();
    const listen = await subscribedInProcess([
      'listen',
      '--json',
      '--url',
      a.url,
      '--url',
      b.url,
      '--url',
      c.url,
      '--api-key',
      KEYS.alice,
      '--streams',
      'macro-wire',
    ]);
    const publisher = await connect({ url: b.url, apiKey: KEYS.macroWire });
    const acks: string[] = [];
    let stop = false;
    const publishing = (async () => {
      while (!stop) {
        // Never more than 50 ahead of what listen printed: an outage's posts stay within the replay's last 100.
        if (acks.length - lineCount(listen.stdout) >= 50) {
          await listen.waitFor((out) => acks.length - lineCount(out.stdout) < 50, 'listen to catch up', 30_000);
        }
        acks.push((await publisher.publish({ streamId: 'macro-wire', content: `post ${acks.length}` })).post.id);
      }
    })();
    try {
      await listen.waitFor((out) => lineCount(out.stdout) >= 10, 'the first posts');
      a.cli.child.kill('SIGKILL');
      await a.cli.exit();
      const killedAt = acks.length;
      await listen.waitFor((out) => /^stream-posts: reconnected: /m.test(out.stderr), 'the reconnection', 30_000);
      // Posts published through B while listen was moving on, and after it.
      await listen.waitFor(
        (out) => acks.length >= killedAt + 20 && lineCount(out.stdout) >= killedAt + 20,
        'posts after the kill',
        30_000,
      );
    } finally {
      stop = true;
      await publishing;
      await publisher.close();
    }
    await listen.waitFor((out) => lineCount(out.stdout) >= acks.length, `all ${acks.length} posts`, 30_000);
    const printed = jsonLines(listen.stdout).map((line) => line.data.id as string);
    expect(printed).toEqual(acks);
    // It moved to the next address at once, and said so.
    expect(listen.stderr).toMatch(/^stream-posts: reconnecting now \(/m);
    expect(listen.stderr).toContain(`connecting to ${b.url}/v1/ws`);
  });
});

describe('post with several --url', () => {
  it('a dead first address is passed over, over WebSocket and over REST', async () => {
    const [, live] = await threeInstances();
    const dead = await deadUrl();
    for (const via of ['ws', 'rest']) {
      const result = await runInProcess([
        'post',
        '--url',
        `${dead},${live.url}`,
        '--api-key',
        KEYS.macroWire,
        '--stream',
        'macro-wire',
        '--json',
        '--via',
        via,
        `via ${via}`,
      ]);
      expect(result.code, result.stderr).toBe(0);
      const [line] = jsonLines(result.stdout);
      expect(line).toMatchObject({ duplicate: false, post: { streamId: 'macro-wire', text: `via ${via}` } });
    }
    const batch = await runInProcess(
      [
        'post',
        '--batch',
        '--url',
        dead,
        '--url',
        live.url,
        '--api-key',
        KEYS.macroWire,
        '--stream',
        'macro-wire',
        '--via',
        'rest',
      ],
      {
        stdin: '{"content":"one"}\n{"content":"two"}\n',
      },
    );
    expect(batch.code, batch.stderr).toBe(0);
    expect(jsonLines(batch.stdout).map((line) => line.post?.text)).toEqual(['one', 'two']);
  });

  it('no address answering: exit 3 naming each address, never the key', async () => {
    const [first, second] = [await deadUrl(), await deadUrl()];
    const result = await runInProcess([
      'post',
      '--url',
      first,
      '--url',
      second,
      '--api-key',
      KEYS.macroWire,
      '--stream',
      'macro-wire',
      'nowhere',
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`${first}/v1/ws`);
    expect(result.stderr).toContain(`${second}/v1/ws`);
    expectCleanError(result.stderr);
  });
});
