import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runToEnd } from '../support/cli.js';
import { http, KEYS } from '../support/harness.js';
import { cliFixture } from '../support/serve.js';
import { Tmux, publishAsOwner, rowsWith, styleOf } from '../terminal/tmux.js';

const fixture = cliFixture('terminal-trader');

let words = 0;
/** A word no other post of the shared serve has (lower case: a rule's match, a row's text). */
const unique = (label: string) => `${label}${process.pid}x${++words}`;

/** A config folder (for XDG_CONFIG_HOME) holding `config`. */
async function configDir(config: unknown): Promise<string> {
  const directory = await mkdtemp(join(fixture.tmp, 'config-'));
  await mkdir(join(directory, 'stream-posts'), { recursive: true });
  await writeFile(join(directory, 'stream-posts', 'config.json'), JSON.stringify(config));
  return directory;
}

const configOf = async (directory: string) =>
  JSON.parse(await readFile(join(directory, 'stream-posts', 'config.json'), 'utf8')) as {
    profiles: Record<string, Record<string, unknown>>;
    [key: string]: unknown;
  };

/** `terminal` as alice against the file's serve. */
function terminal(args: string[] = [], env: Record<string, string> = {}): Promise<Tmux> {
  return Tmux.start(['terminal', '--url', fixture.serve.url, '--last', '0', ...args], {
    STREAM_POSTS_API_KEY: KEYS.alice,
    ...env,
  });
}

const connected = (tmux: Tmux) => tmux.waitFor(/● connected/, 'the connected header');
const post = (stream: string, text: string, extra: Record<string, unknown> = {}) =>
  publishAsOwner(fixture.serve.url, stream, text, extra);

/** The screen's lines joined (a long error wraps over several). */
const joined = (screen: string) => screen.replace(/\n/g, '');

/** The line of the selected row. */
const selectedRow = (screen: string) => screen.split('\n').find((line) => line.startsWith('›')) ?? '';

/** Moves the selection down until it is on the row showing `text` (each key waited for). */
async function select(tmux: Tmux, text: string, marker = '›'): Promise<void> {
  for (let step = 0; step < 40; step++) {
    const screen = await tmux.screen();
    const line = screen.split('\n').find((row) => row.startsWith(marker)) ?? '';
    if (line.includes(text)) return;
    await tmux.keys('j');
    await tmux.waitFor((next) => (next.split('\n').find((row) => row.startsWith(marker)) ?? '') !== line, 'a move');
  }
  throw new Error(`the selection never reached ${text}`);
}

describe('terminal: coins', () => {
  it('tags $CASHTAGs, known #HASHTAGs (the profile adds its own) and the custom target, not hashtags in links; t filters', async () => {
    const tmux = await terminal([], {
      XDG_CONFIG_HOME: await configDir({ profiles: { default: { terminal: { coins: ['zqcoin'] } } } }),
    });
    await connected(tmux);
    const tagged = unique('tagged');
    const whale = unique('whale');
    const plain = unique('plain');
    await post('macro-wire', `${tagged} #zqcoin rallies with #ETH, not #notacoin nor https://x.example/page#SOL`);
    await post('whale-alerts', `${whale} moved 900`); // customTarget BTC
    await post('macro-wire', `${plain} nothing here`);
    const screen = await tmux.waitFor((text) => text.includes(tagged) && text.includes(plain), 'the posts');
    const [row] = rowsWith(screen, tagged);
    expect(row).toContain('$ZQCOIN $ETH');
    expect(row).not.toContain('$SOL');
    expect(row).not.toContain('$NOTACOIN');
    expect(rowsWith(screen, whale)[0]).toContain('$BTC');
    expect(rowsWith(screen, plain)[0]).not.toContain('$');

    await select(tmux, tagged);
    await tmux.keys('t');
    const filtered = await tmux.waitFor(/coin \$ZQCOIN \(t clears\)/, 'the coin in the header');
    expect(filtered).toContain(tagged);
    expect(filtered).not.toContain(plain);
    expect(filtered).not.toContain(whale);
    await tmux.keys('t');
    await tmux.waitFor((text) => !text.includes('coin $ZQCOIN'), 'the filter cleared');
    // The selection stays on its line as the list fills in above it; `g` goes to the top.
    await tmux.keys('g');
    await tmux.waitFor((text) => text.includes(plain) && text.includes(whale) && text.includes(tagged), 'every post');
    // A post that names no coin: `t` says so and filters nothing.
    await tmux.keys('g');
    await tmux.waitFor((text) => selectedRow(text).includes(plain), 'the newest selected');
    await tmux.keys('t');
    await tmux.waitFor(/this post names no coin/, 'the footer');
  });

  it('a profile coin that is not a symbol is a usage error naming it', async () => {
    const tmux = await terminal([], {
      XDG_CONFIG_HOME: await configDir({ profiles: { default: { terminal: { coins: ['BTC', 'B TC'] } } } }),
    });
    const screen = await tmux.waitFor(/\[exit 2\]/, 'the exit');
    expect(joined(screen)).toContain('terminal.coins[1] "B TC" is not a coin symbol');
  });
});

describe('terminal: highlights with a colour', () => {
  const ruleConfig = (color: string) =>
    configDir({ profiles: { default: { alerts: [{ match: 'zqetf', action: 'highlight', color }] } } });

  for (const theme of ['dark', 'light']) {
    it(`colours only what the rule matched, in the row and the detail pane (--theme ${theme})`, async () => {
      const tmux = await terminal(['--theme', theme], { XDG_CONFIG_HOME: await ruleConfig('red') });
      await connected(tmux);
      const word = unique('spot');
      const newest = unique('newest');
      await post('macro-wire', `${word} zqetf approved`);
      await post('macro-wire', newest);
      const screen = await tmux.waitFor((text) => text.includes(newest) && text.includes(word), 'the posts', true);
      // Red behind bright white, bold: the same on a dark and a light background.
      expect(styleOf(screen, 'zqetf')).toMatchObject({ bg: '41', fg: '97', bold: true, inverse: false });
      expect(styleOf(screen, 'approved')).toMatchObject({ bg: undefined });
      expect(styleOf(screen, word)).toMatchObject({ bg: undefined });
      await tmux.keys('j', 'Enter');
      const detail = await tmux.waitFor(/arrived/, 'the detail pane', true);
      expect(styleOf(detail, 'zqetf', 'last')).toMatchObject({ bg: '41', fg: '97' });
      expect(styleOf(detail, 'approved', 'last')).toMatchObject({ bg: undefined });
    });
  }

  it('an unknown colour is a usage error naming the rule and the colours', async () => {
    const tmux = await terminal([], { XDG_CONFIG_HOME: await ruleConfig('purple') });
    const screen = joined(await tmux.waitFor(/\[exit 2\]/, 'the exit'));
    expect(screen).toContain('profiles.default.alerts.0.color');
    expect(screen).toContain('colours: red, green, yellow, blue, magenta, cyan');
  });
});

describe('terminal: sources', () => {
  it("shows a post's source after the stream, sanitized, and M mutes that source alone", async () => {
    const tmux = await terminal();
    const output = join(fixture.tmp, 'pane-sources');
    await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
    await connected(tmux);
    const hostile = unique('hostile');
    const calm = unique('calm');
    const rest = (content: string, sourceName: string) =>
      http(fixture.serve, 'POST', '/v1/streams/macro-wire/post', {
        key: KEYS.macroWire,
        body: { content, metadata: { sourceName } },
      });
    expect((await rest(`${hostile} first`, 'Zq\u001B[2JWire')).status).toBe(201);
    expect((await rest(`${calm} second`, 'Calm Desk')).status).toBe(201);
    const screen = await tmux.waitFor((text) => text.includes(hostile) && text.includes(calm), 'the posts');
    expect(rowsWith(screen, hostile)[0]).toMatch(/Macro Wire\s+Zq \[2JWire .*first/);
    expect(rowsWith(screen, calm)[0]).toMatch(/Macro Wire\s+Calm Desk .*second/);
    expect(await readFile(output, 'utf8')).not.toContain('\u001B[2JWire');

    await select(tmux, hostile);
    await tmux.keys('Enter');
    const detail = await tmux.waitFor(/arrived/, 'the detail pane');
    expect(detail).toMatch(/Macro Wire Zq \[2JWire arrived/);
    await tmux.keys('Enter');
    await tmux.waitFor((text) => !text.includes('arrived'), 'the pane closed');
    await tmux.keys('M');
    const muted = await tmux.waitFor(/source Zq \[2JWire muted/, 'the footer');
    expect(muted).not.toContain(hostile);
    expect(muted).toContain(calm);
    await tmux.keys('?');
    expect(await tmux.waitFor(/Keys/, 'the help')).toMatch(/M\s+mute the selected post's source/);
    // The streams list shows the muted source: m shows it again.
    await tmux.keys('Escape', 'f');
    await tmux.waitFor(/muted {2}source Zq \[2JWire/, 'the source in the list');
    await select(tmux, 'source Zq');
    await tmux.keys('m', 'Enter');
    await tmux.waitFor((text) => text.includes(hostile) && text.includes(calm), 'the source shown again');
  });
});

describe('terminal: session memory', () => {
  it('keeps mutes, pins and rules added on the a screen in the profile, restores them, and keeps the rest of the file', async () => {
    const home = await configDir({
      extra: 'kept',
      profiles: {
        default: { stream: 'macro-wire', terminal: { coins: ['ZQCOIN'] } },
        other: { url: 'ws://127.0.0.1:1' },
      },
    });
    const pinned = unique('pinned');
    const whale = unique('whale');
    const ruled = unique('ruled');
    const first = await terminal([], { XDG_CONFIG_HOME: home });
    await connected(first);
    const { post: kept } = await post('macro-wire', `${pinned} keep this`);
    await post('whale-alerts', `${whale} moved`);
    await post('macro-wire', `${ruled} zqrule here`);
    const sourced = unique('sourced');
    const rest = await http(fixture.serve, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: `${sourced} from a desk`, metadata: { sourceName: 'Zq Desk' } },
    });
    expect(rest.status).toBe(201);
    await first.waitFor((text) => text.includes(pinned) && text.includes(sourced), 'the posts');
    await select(first, sourced);
    await first.keys('M');
    await first.waitFor((text) => !text.includes(sourced), 'the source muted');
    await first.keys('g');
    await select(first, pinned);
    await first.keys('p');
    await first.waitFor(/1 pinned/, 'the pin');
    // Mute Whale Alerts in the streams list.
    await first.keys('f');
    await first.waitFor(/Streams: j\/k move/, 'the list');
    await select(first, 'Whale Alerts');
    await first.keys('m', 'Enter');
    await first.waitFor((text) => !text.includes(whale) && text.includes(ruled), 'the stream muted');
    // A rule typed on the a screen acts at once, on the posts already held.
    await first.keys('a', '+');
    await first.waitFor(/new rule: ▏/, 'the rule line');
    await first.type('highlight:purple zqrule');
    await first.keys('Enter');
    await first.waitFor(/✕ no colour named "purple"/, 'the error');
    for (let at = 0; at < 'purple zqrule'.length; at++) await first.keys('BSpace');
    await first.type('red zqrule');
    await first.keys('Enter');
    await first.waitFor(/added app rule 1: highlight \/zqrule\//, 'the rule added');
    await first.keys('Escape');
    const coloured = await first.waitFor((text) => text.includes(ruled), 'the feed', true);
    expect(styleOf(coloured, 'zqrule')).toMatchObject({ bg: '41' });
    await first.keys('q');
    await first.waitFor(/\[exit 0\]/, 'the exit');

    const saved = await configOf(home);
    expect(saved.extra).toBe('kept');
    expect(saved.profiles['other']).toEqual({ url: 'ws://127.0.0.1:1' });
    expect(saved.profiles['default']).toMatchObject({
      stream: 'macro-wire',
      terminal: {
        coins: ['ZQCOIN'],
        muted: ['whale-alerts'],
        mutedSources: ['Zq Desk'],
        solo: null,
        pins: [kept.id],
        rules: [{ match: 'zqrule', action: 'highlight', color: 'red' }],
      },
    });

    // The next start: the pin (its post delivered again as history), the mute and the rule are back.
    const second = await terminal(['--last', '20'], { XDG_CONFIG_HOME: home });
    const restored = await second.waitFor((text) => text.includes(ruled) && /1 pinned/.test(text), 'the session', true);
    expect(joined(restored)).toContain('1 muted');
    expect(restored).not.toContain(whale);
    expect(restored).not.toContain(sourced);
    expect(styleOf(restored, 'zqrule')).toMatchObject({ bg: '41' });
    expect(restored.split('\n')[1]).toContain(pinned);
    // Removed on the a screen: gone from the file too.
    await second.keys('a');
    await second.waitFor(/app rule 1/, 'the rule listed');
    await select(second, 'app rule 1', '›');
    await second.keys('d');
    await second.waitFor(/removed app rule 1/, 'the removal');
    await second.keys('q');
    await second.waitFor(/\[exit 0\]/, 'the exit');
    expect((await configOf(home)).profiles['default']!['terminal']).toMatchObject({ rules: [], coins: ['ZQCOIN'] });
  });

  it('a saved session that is not valid is a warning, and the terminal starts clean', async () => {
    const home = await configDir({ profiles: { default: { terminal: { muted: 5, pins: ['x'] } } } });
    const tmux = await terminal([], { XDG_CONFIG_HOME: home });
    const screen = await tmux.waitFor(/the saved session is not valid at terminal\.muted/, 'the warning');
    expect(screen).toMatch(/● connected/);
    expect(screen).not.toMatch(/\d muted/);
  });

  it("config set keeps the terminal section and a rule's colour", async () => {
    const terminalSection = { coins: ['ZQCOIN'], muted: ['whale-alerts'], pins: ['p1'] };
    const alerts = [{ match: 'ETF', action: 'highlight', color: 'red' }];
    const home = await configDir({ profiles: { default: { alerts, terminal: terminalSection } } });
    const set = await runToEnd(['config', 'set', 'default', '--stream', 'macro-wire'], {
      env: { XDG_CONFIG_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    expect((await configOf(home)).profiles['default']).toEqual({
      alerts,
      terminal: terminalSection,
      stream: 'macro-wire',
    });
  });
});
