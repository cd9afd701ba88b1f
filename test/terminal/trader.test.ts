import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coinsOf, knownCoins } from '../../src/terminal/coins.js';
import { SessionMemory } from '../../src/terminal/memory.js';
import { ruleFromLine } from '../../src/terminal/rule-line.js';
import type { Remembered } from '../../src/terminal/model-types.js';

describe('coins of a post', () => {
  const known = knownCoins(['zqcoin']);
  it.each([
    ['$btc and $Eth', null, ['BTC', 'ETH']],
    ['#ETH up, #breaking news, #ZQCOIN', null, ['ETH', 'ZQCOIN']],
    ['#SOL first then $BTC then #sol again', null, ['SOL', 'BTC']],
    ['see https://x.example/page#SOL and https://x.example/$DOGE', null, []],
    ['[chart](https://x.example/a#ETH) #eth', null, ['ETH']],
    ['moved 900', 'BTC', ['BTC']],
    ['$ETH too', 'btc', ['BTC', 'ETH']],
    ['a#ETH, &#ETH, #1', null, []],
  ] as const)('%s (target %s)', (text, target, coins) => {
    expect(coinsOf(text, target, known)).toEqual(coins);
  });
});

describe('a rule typed on the a screen', () => {
  it.each([
    ['highlight:red ETF|CPI', { action: 'highlight', color: 'red', source: 'ETF|CPI' }],
    ['pin \\bhalving\\b', { action: 'pin', source: '\\bhalving\\b' }],
    ['SEC sues', { action: 'bell', source: 'SEC sues' }],
  ])('%s', (line, rule) => {
    expect(ruleFromLine(line, [])).toMatchObject({ ...rule, app: true, name: 'app rule 1' });
  });

  it.each([
    ['', 'type a pattern'],
    ['highlight:purple ETF', 'no colour named "purple"'],
    ['pin:red ETF', 'a colour is for the highlight action'],
    ['mute', 'mute needs a pattern'],
    ['exec echo', 'write them in the profile'],
    ['bell (', 'Unterminated group'],
  ])('%s is not a rule: %s', (line, error) => {
    expect(ruleFromLine(line, [])).toContain(error);
  });
});

describe('the session kept in the config file', () => {
  let folder = '';
  afterEach(() => rm(folder, { recursive: true, force: true }));
  const state: Remembered = { muted: ['a'], solo: null, mutedSources: [], pins: ['p1'], rules: [] };

  it('changes only its fields, and never writes over a file that is not JSON', async () => {
    folder = await mkdtemp(join(tmpdir(), 'stream-posts-memory-'));
    const path = join(folder, 'config.json');
    const reports: string[] = [];
    const writes: object[] = [];
    const memory = new SessionMemory({
      path,
      profile: 'work',
      write: async (config) => {
        writes.push(config);
        await writeFile(path, JSON.stringify(config));
      },
      report: (text) => reports.push(text),
    });
    await writeFile(path, JSON.stringify({ top: 1, profiles: { work: { apiKey: 'k', terminal: { coins: ['X'] } } } }));
    memory.soon(() => state);
    await memory.close();
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      top: 1,
      profiles: { work: { apiKey: 'k', terminal: { coins: ['X'], ...state } } },
    });
    await writeFile(path, '{"profiles": {"work": {"apiKey": "secret-key"');
    memory.soon(() => state);
    await memory.close();
    expect(writes).toHaveLength(1);
    expect(await readFile(path, 'utf8')).toBe('{"profiles": {"work": {"apiKey": "secret-key"');
    expect(reports).toEqual([`the session was not kept in ${path}: it is not valid JSON`]);
  });
});
