import { beforeAll, describe, expect, it } from 'vitest';
import { adminState, KEYS, publishToStream, openClient } from '../support/harness.js';
import { until } from '../support/poll.js';
import { client, ensureBuilt, finish, type CliProcess } from '../support/cli.js';
import { jsonLines } from '../support/cli-output.js';
import { startServe } from '../support/serve.js';
import { proxyTo } from '../support/proxy.js';

beforeAll(ensureBuilt);

const TOTAL = 1_000;
const SLOW_MS = 60_000;

/** Result lines printed so far. */
const results = (cli: CliProcess) => cli.stdout.split('\n').length - 1;

describe('post --batch across drops', () => {
  it('1,000 posts with the connection cut twice while posts are in flight: exit 0, 1,000 ok results, exactly 1,000 posts on the service, each seen once', async () => {
    const serve = await startServe(['--rate-limit', '0']);
    const proxy = await proxyTo(serve.port);
    const before = (await adminState(serve)).posts;

    // A subscriber straight on serve, connected throughout: every post the service publishes reaches it once.
    const watcher = await openClient(`${serve.url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
    await watcher.nextEvent('connected');
    const ack = await watcher.request('on-stream-post', { streamIds: 'crypto-legal', lastPosts: 0 });
    expect(ack.event, JSON.stringify(ack)).toBe('sub_ack');

    const cli = client(
      [
        'post',
        '--batch',
        '--url',
        proxy.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'crypto-legal',
        '--window',
        '32',
        '-v',
      ],
      { stdin: 'pipe' },
    );
    const feed = (from: number, to: number) => {
      let text = '';
      for (let i = from; i <= to; i += 1) text += `${JSON.stringify({ content: `fault batch ${i}` })}\n`;
      cli.child.stdin!.write(text);
    };
    const published = async () => (await adminState(serve)).posts - before;

    /**
     * Holds the service's replies back, gives the batch more input, waits
     * until the service has published posts whose acks the client has not
     * seen, then resets the connection: those posts are in flight at the cut
     * and the client must resend them (the service deduplicates the resends).
     */
    const cutWithPostsInFlight = async (what: string, more: () => void) => {
      proxy.hold();
      more();
      await until(
        async () => (await published()) > results(cli),
        `posts published whose acks are held back (${what})`,
        SLOW_MS,
      );
      const at = { published: await published(), results: results(cli), connections: proxy.connections };
      proxy.cut();
      return at;
    };

    // The input comes in parts, so the batch cannot finish before a cut; each cut is triggered by progress.
    feed(1, 400);
    await cli.waitFor((out) => out.stdout.split('\n').length - 1 >= 300, '300 results', SLOW_MS);
    const first = await cutWithPostsInFlight('first cut', () => feed(401, 800));
    await cli.waitFor((out) => out.stdout.split('\n').length - 1 >= 650, '650 results after the first cut', SLOW_MS);
    const second = await cutWithPostsInFlight('second cut', () => {
      feed(801, TOTAL);
      cli.child.stdin!.end();
    });

    const { code, stdout, stderr } = await finish(cli, SLOW_MS);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`${TOTAL} published, 0 failed`);
    expect(stderr.match(/reconnecting in/g)?.length ?? 0, stderr).toBeGreaterThanOrEqual(2);
    console.log(
      `batch: cut 1 at ${first.results} results / ${first.published} published, cut 2 at ${second.results} results / ${second.published} published; ${proxy.connections} connections`,
    );

    // Both cuts came mid-batch, with posts published before and after each.
    expect(proxy.connections).toBeGreaterThanOrEqual(3);
    expect(first.connections).toBe(1);
    expect(second.connections).toBeGreaterThanOrEqual(2);
    expect(first.results).toBeGreaterThanOrEqual(300);
    expect(first.published).toBeGreaterThan(first.results);
    expect(second.published).toBeGreaterThan(first.published);
    expect(second.results).toBeGreaterThanOrEqual(650);
    expect(second.published).toBeGreaterThan(second.results);
    expect(second.published).toBeLessThan(TOTAL);

    // One `ok` result per line, in order, each a different post.
    const lines = jsonLines(stdout);
    expect(lines).toHaveLength(TOTAL);
    lines.forEach((result, i) => {
      expect(result).toMatchObject({
        line: i + 1,
        duplicate: false,
        post: { streamId: 'crypto-legal', text: `fault batch ${i + 1}` },
      });
      expect(result).not.toHaveProperty('error');
    });
    const ids = lines.map((result) => result.post.id as string);
    expect(new Set(ids).size).toBe(TOTAL);

    // Exactly 1,000 posts on the service: a resent post it already had was deduplicated, not published again.
    expect(await published()).toBe(TOTAL);

    // The subscriber saw each post once, the very post its line reported; a last post marks the end of the stream.
    const marker = await publishToStream(serve.url, 'crypto-legal', 'fault batch: end marker');
    await watcher.next(
      (message) => message.event === 'stream.post.created' && message.data.id === marker.post.id,
      SLOW_MS,
    );
    const seen = watcher.messages.filter(
      (message) => message.event === 'stream.post.created' && message.data.id !== marker.post.id,
    );
    expect(seen).toHaveLength(TOTAL);
    expect(new Set(seen.map((message) => message.data.id)).size).toBe(TOTAL);
    const reported = new Map(lines.map((result) => [result.post.id as string, result.post]));
    for (const message of seen) expect(message.data).toEqual(reported.get(message.data.id));
    const texts = seen.map((message) => message.data.text as string);
    expect(new Set(texts).size).toBe(TOTAL);
    expect(
      watcher.messages.filter(
        (message) =>
          message.event !== 'stream.post.created' &&
          message.event !== 'sub_ack' &&
          message.event !== 'connected' &&
          message.event !== 'keep-alive',
      ),
    ).toEqual([]);
  }, 120_000);
});
