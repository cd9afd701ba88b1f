import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HOSTED_KEYS, HOSTED_STREAMS, startHostedDouble, type HostedDouble } from '../support/hosted-double.js';
import { ensureBuilt, finish } from '../support/cli.js';
import { jsonLines, subscribedInProcess } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';

// The CLI against a double of the hosted service's dialect: no `connected` to wait for,
// `sub_ack` without `history`, posts without `streamName`, REST lists in pages.

let hosted: HostedDouble;
beforeAll(() => ensureBuilt());
beforeEach(async () => {
  hosted = await startHostedDouble();
});
afterEach(() => hosted.close());

const [macro, legal, whales] = HOSTED_STREAMS as [
  (typeof HOSTED_STREAMS)[0],
  (typeof HOSTED_STREAMS)[0],
  (typeof HOSTED_STREAMS)[0],
];
const as = (key: string, ...args: string[]) => [...args, '--url', hosted.url, '--api-key', key];
const reader = (...args: string[]) => as(HOSTED_KEYS.reader, ...args);

describe('listen and tree against the hosted dialect', () => {
  it('listen: one subscribe; the live post shown under its stream name, looked up once', async () => {
    const listen = await subscribedInProcess(reader('listen', '--streams', macro.id, '--count', '2'));
    hosted.publish(macro.id, 'first live');
    hosted.publish(macro.id, 'second live');
    const { code, stdout, stderr } = await finish(listen);
    expect(code, stderr).toBe(0);
    const headers = stdout.split('\n').filter((line) => / Macro Desk$/.test(line));
    expect(headers).toHaveLength(2);
    expect(stdout).toContain('first live');
    expect(stdout).toContain('second live');
    expect(stdout).not.toContain(macro.id);
    expect(hosted.subscribes).toEqual([1]);
    expect(hosted.lookups.get(macro.id)).toBe(1);
  });

  it('listen --last 2 --count 1 over two streams: the history of both, then the live post, exit 0', async () => {
    const listen = await subscribedInProcess(
      reader('listen', '--json', '--streams', `${macro.id},${legal.id}`, '--last', '2', '--count', '1'),
    );
    await listen.waitFor((out) => jsonLines(out.stdout).length >= 4, 'the history of both streams');
    hosted.publish(legal.id, 'live after the history');
    const { code, stdout, stderr } = await finish(listen);
    expect(code, stderr).toBe(0);
    const lines = jsonLines(stdout);
    expect(lines.map((line) => line.data.text)).toEqual([
      'history 2 of A',
      'history 3 of A',
      'history 2 of B',
      'history 3 of B',
      'live after the history',
    ]);
    // --json gives the post with its stream's name filled in, as the text view shows it.
    expect(lines.map((line) => line.data.streamName)).toEqual([
      macro.name,
      macro.name,
      legal.name,
      legal.name,
      legal.name,
    ]);
    expect(hosted.subscribes).toEqual([1]);
    expect([hosted.lookups.get(macro.id), hosted.lookups.get(legal.id)]).toEqual([1, 1]);
  });

  it('tree --count 1: one subscribe, the live item printed with its title', async () => {
    const tree = await subscribedInProcess(reader('tree', '--json', '--last', '1', '--count', '1'));
    await tree.waitFor((out) => jsonLines(out.stdout).length >= 3, 'the history items');
    hosted.publish(whales.id, 'live whale');
    const { code, stdout, stderr } = await finish(tree);
    expect(code, stderr).toBe(0);
    const items = jsonLines(stdout);
    expect(items).toHaveLength(4);
    expect(items[3]).toMatchObject({ title: whales.name, en: 'live whale' });
    expect(hosted.subscribes).toEqual([1]);
    expect(hosted.lookups.size).toBe(0);
  });
});

describe('post against the hosted dialect', () => {
  it('post --stream publishes without waiting for a connected event; exit 0', async () => {
    const result = await runInProcess(as(HOSTED_KEYS.streamA, 'post', '--stream', macro.id, 'published to the double'));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^01HOSTED\d+\n$/);
  });

  it('post with a stream key and no --stream: exit 2 naming --stream, as the first word said no stream', async () => {
    const result = await runInProcess(as(HOSTED_KEYS.streamA, 'post', 'no stream named'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--stream');
    expect(result.stdout).toBe('');
  });

  it('a refused key: exit 3, the key never printed', async () => {
    const result = await runInProcess(as('wrong_key_123456', 'post', '--stream', macro.id, 'x'));
    expect(result.code).toBe(3);
    expect(result.stderr).not.toContain('wrong_key_123456');
  });
});

describe('REST commands against the hosted dialect', () => {
  it('streams: every page, with description, featured and targets', async () => {
    const [table, json] = await Promise.all([
      runInProcess(reader('streams')),
      runInProcess(reader('streams', '--json')),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(jsonLines(json.stdout).map((stream) => stream.id)).toEqual(HOSTED_STREAMS.map((stream) => stream.id));
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +FEATURED +TARGETS +DESCRIPTION$/);
    expect(lines.find((line) => line.startsWith(macro.id))).toMatch(/Macro Desk +yes +- +Rates and prints$/);
    expect(lines.find((line) => line.startsWith(whales.id))).toMatch(/Whale Watch +- +BTC ETH SOL +Large moves$/);
  });

  it('history --limit 3 follows the pages; posts shown under their stream names', async () => {
    const result = await runInProcess(reader('history', '--json', '--streams', legal.id, '--limit', '3'));
    expect(result.code, result.stderr).toBe(0);
    const lines = jsonLines(result.stdout);
    expect(lines.map((line) => line.data.text)).toEqual(['history 1 of B', 'history 2 of B', 'history 3 of B']);
    expect(lines.every((line) => line.data.streamName === legal.name)).toBe(true);
    expect(hosted.lookups.get(legal.id)).toBe(1);
  });

  it('targets: the selection of every custom stream; targets set replaces it', async () => {
    const before = await runInProcess(reader('targets', '--json'));
    expect(before.code, before.stderr).toBe(0);
    expect(jsonLines(before.stdout)).toEqual([
      { streamId: whales.id, name: whales.name, selectedTargets: ['BTC'], customTargets: ['BTC', 'ETH', 'SOL'] },
    ]);
    const set = await runInProcess(reader('targets', 'set', whales.id, 'ETH, SOL'));
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe(`${whales.id}: ETH SOL\n`);
    expect(hosted.selected.get(whales.id)).toEqual(['ETH', 'SOL']);
    const one = await runInProcess(reader('targets', whales.id));
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.split('\n')[1]).toMatch(/Whale Watch +ETH SOL +BTC ETH SOL$/);
  });

  it('targets set: a refused selection exits 1 with the code, bad usage 2', async () => {
    const [refused, notCustom, usage] = await Promise.all([
      runInProcess(reader('targets', 'set', whales.id, 'DOGE')),
      runInProcess(reader('targets', 'set', macro.id, 'BTC', '--json')),
      runInProcess(reader('targets', 'set', whales.id)),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid-argument');
    expect(notCustom.code).toBe(1);
    expect(usage.code).toBe(2);
    expect(hosted.selected.get(whales.id)).toEqual(['BTC']);
  });
});
