import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coinsOf, knownCoins } from '../../src/terminal/coins.js';
import { SessionMemory } from '../../src/terminal/memory.js';
import { remembering } from '../../src/terminal/remembering.js';
import { ruleFromLine } from '../../src/terminal/rule-line.js';
import type { AlertRule } from '../../src/terminal/alerts.js';
import { compileRules } from '../../src/terminal/alerts.js';
import { update } from '../../src/terminal/update.js';
import { TerminalModel } from '../../src/terminal/model.js';
import type { Remembered } from '../../src/terminal/model.js';
import type { Post } from '../../src/protocol/types.js';

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

  it("says what was not restored, then a save that failed, through the terminal's update", async () => {
    folder = await mkdtemp(join(tmpdir(), 'stream-posts-memory-'));
    const path = join(folder, 'config.json');
    await writeFile(path, 'not JSON');
    const kept = remembering(
      { coins: [], remembered: {}, warning: 'the saved session was left out' },
      { path, profile: 'work', write: (config) => writeFile(path, JSON.stringify(config)) },
    );
    const model = new TerminalModel({ capacity: 10, now: () => 0, ...kept.model });
    const said: string[] = [];
    kept.start((text) => {
      said.push(text);
      update(model, { kind: 'say', text });
    });
    expect(model.message).toBe('the saved session was left out');
    kept.save(state);
    await kept.close();
    const failed = `the session was not kept in ${path}: it is not valid JSON`;
    expect(said).toEqual(['the saved session was left out', failed]);
    expect(model.message).toBe(failed);
    expect(await readFile(path, 'utf8')).toBe('not JSON');
  });
});

describe('the model and what a session keeps', () => {
  let next = 0;
  const post = (text: string, fields: Partial<Post> = {}): Post => ({
    id: `k${++next}`,
    streamId: 'macro-wire',
    streamName: 'Macro Wire',
    text,
    contentType: 'rawtext',
    createdAt: new Date(Date.UTC(2026, 0, 1, 12, 0, next)).toISOString(),
    releaseAt: null,
    hidden: false,
    customTarget: null,
    ...fields,
  });

  it('restores mutes, solo and pins (pinned as their posts come), and tells each change', () => {
    let told = 0;
    const model = new TerminalModel({
      capacity: 10,
      restored: { muted: ['whale-alerts'], solo: null, mutedSources: ['Desk'], pins: ['wanted'] },
    });
    const tell = () => {
      if (model.takeUnsaved()) told += 1;
    };
    for (const made of [
      post('a whale', { streamId: 'whale-alerts' }),
      post('from the desk', { metadata: { sourceName: 'Desk' } }),
      { ...post('pinned again'), id: 'wanted' },
    ]) {
      model.add(made, true);
      tell();
    }
    expect(model.rows().map((entry) => entry.text)).toEqual(['pinned again']);
    expect(model.pinned().map((entry) => entry.id)).toEqual(['wanted']);
    model.toggleSolo('macro-wire');
    tell();
    expect(model.remembered()).toEqual({
      muted: ['whale-alerts'],
      solo: 'macro-wire',
      mutedSources: ['Desk'],
      pins: ['wanted'],
      rules: [],
    });
    expect(told).toBe(2);
  });

  it('a rule added acts at once on the posts held, and one removed lets them go', () => {
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('giveaway spam'), false);
    model.add(post('ETF news'), false);
    const mute = ruleFromLine('mute giveaway', model.rules) as AlertRule;
    model.addRule(mute);
    expect(model.rows().map((entry) => entry.text)).toEqual(['ETF news']);
    expect(model.alertCount(mute)).toBe(1);
    expect(model.remembered().rules).toEqual([{ match: 'giveaway', action: 'mute' }]);
    model.removeRule(mute);
    expect(model.rows().map((entry) => entry.text)).toEqual(['ETF news', 'giveaway spam']);
    expect(model.mutedByRule).toBe(0);
    expect(model.remembered().rules).toEqual([]);
  });

  it('t keeps the posts of the selected post’s first coin; again, every post', () => {
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('$SOL up'), false);
    model.add(post('whale', { customTarget: 'btc' }), false);
    model.toggleCoin();
    expect(model.coin).toBe('BTC');
    expect(model.rows().map((entry) => entry.text)).toEqual(['whale']);
    model.toggleCoin();
    expect(model.rows()).toHaveLength(2);
  });

  it('the a screen adds a typed rule and removes one; a profile rule only until the next start', () => {
    const rules = compileRules([{ name: 'profile rule 1', rule: { match: 'spam', action: 'mute' } }]);
    const model = new TerminalModel({ capacity: 10, rules });
    model.add(post('spam here'), false);
    const press = (...inputs: string[]) => {
      for (const input of inputs)
        update(model, {
          kind: 'key',
          input: input === '\r' ? '' : input,
          key: input === '\r' ? { return: true } : {},
          pageRows: 10,
        });
    };
    press('a', '+', ...'pin here', '\r');
    expect(model.message).toBe('added app rule 1: pin /here/');
    expect(model.rules.map((rule) => rule.name)).toEqual(['profile rule 1', 'app rule 1']);
    press('k', 'd');
    expect(model.message).toBe("removed profile rule 1 until the next start (it is in the profile's alerts)");
    // The post the profile rule muted is shown again, and the rule added pins it.
    expect(model.rows().map((entry) => entry.text)).toEqual(['spam here']);
    expect(model.pinned().map((entry) => entry.text)).toEqual(['spam here']);
    expect(model.remembered().rules).toEqual([{ match: 'here', action: 'pin' }]);
  });
});
