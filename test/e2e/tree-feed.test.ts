import { describe, expect, it } from 'vitest';
import { adminState, advanceClock, afterTest, untilAdminState, KEYS, publishToStream } from '../support/harness.js';
import { PingingTerminal } from '../support/tree-terminal.js';
import { ensureBuilt, finish } from '../support/cli.js';
import { expectCleanError, jsonLines, stripAnsi, subscribedInProcess, waitForLines } from '../support/cli-output.js';
import { inProcess } from '../support/in-process.js';
import { startServe } from '../support/serve.js';

describe('stream-posts tree on the hosted tree feed address', () => {
  it('shows the posts, a hidden one and its release, with the key as a header or in the query', async () => {
    ensureBuilt();
    const serve = await startServe();
    const feed = `${serve.url}/graphql?format=tree`;
    const json = await subscribedInProcess(['tree', '--url', feed, '--api-key', KEYS.alice, '--json']);
    const text = await subscribedInProcess([
      'tree',
      '--url',
      feed,
      '--api-key',
      KEYS.alice,
      '--auth-query',
      '--no-color',
    ]);
    expect((await adminState(serve)).subscriptions).toBe(2);
    expect(json.stderr).toMatch(/subscribed: the tree feed/);

    const plain = await publishToStream(serve.url, 'macro-wire', 'Fed holds rates at 4.25%');
    const markdown = await publishToStream(
      serve.url,
      'crypto-legal',
      '**SEC v. Binance**: dismissal filed, $BNB; see https://example.org/docket',
      {
        contentType: 'markdown',
      },
    );
    const { now } = (await (await fetch(`${serve.httpUrl}/_admin/state`)).json()) as { now: string };
    const hidden = await publishToStream(serve.url, 'macro-wire', 'CPI at 3.1%, $BTC up', {
      releaseAt: new Date(Date.parse(now) + 60_000).toISOString(),
    });
    await waitForLines(json, 3);
    await advanceClock(serve, 120_000);

    const items = await waitForLines(json, 4);
    expect(items.map((item) => item._id)).toEqual([plain.post.id, markdown.post.id, hidden.post.id, hidden.post.id]);
    expect(items.map((item) => item.en)).toEqual([plain.post.text, markdown.post.text, '', hidden.post.text]);
    expect(items.map((item) => item.releaseAt)).toEqual([
      undefined,
      undefined,
      Date.parse(hidden.post.releaseAt!),
      Date.parse(hidden.post.releaseAt!),
    ]);

    await text.waitFor((out) => stripAnsi(out.stdout).includes('CPI at 3.1%'), 'the released post');
    const screen = stripAnsi(text.stdout);
    for (const shown of [
      'Fed holds rates at 4.25%',
      'SEC v. Binance',
      'https://example.org/docket',
      '$BNB',
      `[locked until ${hidden.post.releaseAt}]`,
      '[released]',
      '$BTC',
    ]) {
      expect(screen).toContain(shown);
    }
    expect(screen.indexOf('Fed holds')).toBeLessThan(screen.indexOf('SEC v. Binance'));
    for (const cli of [json, text]) cli.interrupt('SIGTERM');
    for (const cli of [json, text]) expect((await finish(cli)).code).toBe(0);
    for (const cli of [json, text]) expectCleanError(cli.stderr);
  });

  it('a bad key ends it with exit 3, without echoing the key', async () => {
    ensureBuilt();
    const serve = await startServe();
    const result = await finish(
      inProcess(['tree', '--url', `${serve.url}/graphql?format=tree`, '--api-key', 'sp_wrong_key_123', '--auth-query']),
    );
    expect(result.code).toBe(3);
    expectCleanError(result.stderr, ['sp_wrong_key_123']);
  });

  it('a refused subscription (a stream the user does not follow) ends it with exit 1', async () => {
    ensureBuilt();
    const serve = await startServe();
    const result = await finish(
      inProcess(['tree', '--url', `${serve.url}/graphql?format=tree&streamIds=crypto-legal`, '--api-key', KEYS.bob]),
    );
    expect(result.code).toBe(1);
    expect(jsonLines(result.stdout)).toEqual([]);
  });
});

describe('a news terminal of the Tree family against serve', () => {
  it.each(['/graphql?format=tree&', '/v1/ws/on-stream-post-tree?'])(
    'sends login and a ping every 200 ms, gets each pong in time, and keeps one connection and every post (%s)',
    async (address) => {
      ensureBuilt();
      const serve = await startServe();
      const terminal = new PingingTerminal(`${serve.url}${address}apiKey=${KEYS.alice}`, KEYS.alice, 200);
      afterTest(() => terminal.stop());
      await untilAdminState(serve, (state) => state.subscriptions === 1);
      const ids: string[] = [];
      for (const stream of ['macro-wire', 'crypto-legal', 'macro-wire']) {
        const pongs = terminal.pongs;
        await terminal.until(() => terminal.pongs >= pongs + 3, `3 more pongs`);
        ids.push((await publishToStream(serve.url, stream, `news on ${stream}`)).post.id);
        await terminal.until(() => terminal.itemIds.length === ids.length, `the post on ${stream}`);
      }
      expect(terminal.connections).toBe(1);
      expect(terminal.itemIds).toEqual(ids);
    },
  );
});
