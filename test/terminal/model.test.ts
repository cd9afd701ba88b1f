import { THEMES } from '../../src/terminal/theme.js';
import { describe, expect, it, vi } from 'vitest';
import type { Post } from '../../src/protocol/types.js';
import type { AlertRuleError } from '../../src/terminal/alerts.js';
import { compilePattern, compileRules } from '../../src/terminal/alerts.js';
import { FOOTERS, KEY_HELP } from '../../src/terminal/bindings.js';
import { update } from '../../src/terminal/update.js';
import { parseKeys, splitUnfinished } from '../../src/terminal/key-parser.js';
import { RELEASE_MARK_MS, TerminalModel } from '../../src/terminal/model.js';
import { cells, fitLine, fitText, formatRow, lineCells, markMatches } from '../../src/terminal/row.js';
import { FrameStore } from '../../src/terminal/store.js';
import { ScreenWriter } from '../../src/terminal/writer.js';
import { headlineOf, linksOf } from '../../src/render/links.js';

let next = 0;
function post(text: string | null, fields: Partial<Post> = {}): Post {
  next += 1;
  return {
    id: `p${next}`,
    streamId: 'macro-wire',
    streamName: 'Macro Wire',
    text,
    contentType: 'rawtext',
    createdAt: new Date(Date.UTC(2026, 0, 1, 12, 0, next)).toISOString(),
    releaseAt: null,
    hidden: text === null,
    customTarget: null,
    ...fields,
  };
}

const texts = (model: TerminalModel) => model.rows().map((entry) => entry.text);

describe('the terminal model', () => {
  it('keeps the newest first and at most --buffer posts, dropping the oldest', () => {
    const model = new TerminalModel({ capacity: 3 });
    for (const text of ['a', 'b', 'c', 'd']) model.add(post(text), false);
    expect(texts(model)).toEqual(['d', 'c', 'b']);
    expect(model.size).toBe(3);
  });

  it('rows kept up to date as posts come and go are the rows worked out afresh', () => {
    const rules = compileRules([{ name: '--alert 1', rule: { match: 'spam', action: 'mute' } }]);
    const model = new TerminalModel({ capacity: 4, rules });
    model.add(post('a'), false);
    expect(texts(model)).toEqual(['a']);
    for (const text of ['spam', 'b', 'c', 'd', 'e']) model.add(post(text), false);
    expect(texts(model)).toEqual(['e', 'd', 'c', 'b']);
    model.togglePause();
    model.add(post('f'), false);
    expect(texts(model)).toEqual(['e', 'd', 'c']);
    // More than the buffer holds between two looks.
    for (const text of ['g', 'h', 'i', 'j', 'k']) model.add(post(text), false);
    expect(texts(model)).toEqual([]);
    model.togglePause();
    expect(texts(model)).toEqual(['k', 'j', 'i', 'h']);
    expect(model.streams()).toEqual([{ id: 'macro-wire', name: 'Macro Wire', count: 4 }]);
  });

  it('moves a released post to the top, marked until it is selected or a minute passes', () => {
    let now = 1_000;
    const model = new TerminalModel({ capacity: 10, now: () => now });
    const hidden = post(null, { releaseAt: new Date(60_000).toISOString() });
    const again = post(null, { releaseAt: new Date(60_000).toISOString() });
    model.add(hidden, false);
    model.add(again, false);
    model.add(post('after'), false);
    expect(texts(model)).toEqual(['after', null, null]);
    now = 61_000;
    model.add({ ...hidden, text: 'released', hidden: false }, false);
    model.add({ ...hidden, text: 'released', hidden: false }, false);
    expect(texts(model)).toEqual(['released', 'after', null]);
    const released = model.rows()[0]!;
    expect(released.releasedAtMs).toBe(61_000);
    expect(model.freshRelease(released)).toBe(true);
    // At the top, the selection follows the newest: that is not the user selecting it.
    now = 61_000 + RELEASE_MARK_MS - 1;
    expect(model.freshRelease(released)).toBe(true);
    now = 61_000 + RELEASE_MARK_MS;
    expect(model.freshRelease(released)).toBe(false);

    model.add({ ...again, text: 'second', hidden: false }, false);
    expect(texts(model)).toEqual(['second', 'released', 'after']);
    const second = model.rows()[0]!;
    expect(model.freshRelease(second)).toBe(true);
    model.move(1);
    expect(model.freshRelease(second)).toBe(true);
    model.move(-1);
    expect(model.freshRelease(second)).toBe(false);
  });

  it('the selection stays on its post as posts arrive, counting the new ones above; g goes to them', () => {
    const model = new TerminalModel({ capacity: 20 });
    for (const text of ['a', 'b', 'c', 'd', 'e']) model.add(post(text), false);
    model.move(2);
    expect(model.selected()?.text).toBe('c');
    expect(model.newAbove()).toBe(0);
    for (const text of ['f', 'g', 'h']) model.add(post(text), false);
    expect(model.selected()?.text).toBe('c');
    expect(model.newAbove()).toBe(3);
    model.move(-3);
    expect(model.selected()?.text).toBe('f');
    expect(model.newAbove()).toBe(2);
    model.top();
    expect(model.selected()?.text).toBe('h');
    expect(model.newAbove()).toBe(0);
    // At the top the selection follows the newest.
    model.add(post('i'), false);
    expect(model.selected()?.text).toBe('i');
  });

  it('the detail pane stays on the post it opened, and keeps its scroll, until the user moves', () => {
    const model = new TerminalModel({ capacity: 20 });
    for (const text of ['a', 'b']) model.add(post(text), false);
    model.toggleDetail();
    model.scrollDetail(4);
    for (const text of ['c', 'd']) model.add(post(text), false);
    expect(model.selected()?.text).toBe('b');
    expect(model.detailScroll).toBe(4);
    expect(model.newAbove()).toBe(2);
    model.move(-1);
    expect(model.selected()?.text).toBe('c');
    expect(model.detailScroll).toBe(0);
    // At the top with the pane open, the selection still stays put.
    model.move(-1);
    model.add(post('e'), false);
    expect(model.selected()?.text).toBe('d');
    model.toggleDetail();
    expect(model.selected()?.text).toBe('d');
    model.top();
    model.add(post('f'), false);
    expect(model.selected()?.text).toBe('f');
  });

  it('search: case-insensitive, $ before a letter is the cashtag, an invalid pattern keeps the last good one', () => {
    const model = new TerminalModel({ capacity: 10 });
    for (const text of ['buy $BTC now', 'ETH at $3000', 'btc without the tag']) model.add(post(text), false);
    model.setSearch('$btc');
    expect(texts(model)).toEqual(['buy $BTC now']);
    model.setSearch('$btc|$eth');
    expect(texts(model)).toEqual(['buy $BTC now']);
    model.setSearch('(');
    expect(model.searchError).toBe('Unterminated group');
    expect(model.searchPattern).toBe('$btc|$eth');
    model.clearSearch();
    model.setSearch('(');
    expect(model.searching).toBe(false);
    model.setSearch('btc');
    model.setSearch('btc(');
    expect(model.searchError).toBe('Unterminated group');
    expect(model.searchPattern).toBe('btc');
    expect(texts(model)).toEqual(['btc without the tag', 'buy $BTC now']);
    model.setSearch('\\$3');
    expect(model.searchError).toBeUndefined();
    expect(texts(model)).toEqual(['ETH at $3000']);
  });

  it('marks what the search matches in plain and styled lines, leaving their escapes whole', () => {
    const pattern = compilePattern('\\bbtc');
    expect(markMatches('buy BTC and btc', pattern, true)).toBe(
      'buy \u001B[1;4mBTC\u001B[22;24m and \u001B[1;4mbtc\u001B[22;24m',
    );
    expect(markMatches('buy BTC', pattern, false)).toBe('buy BTC');
    const styled = '\u001B[31mB\u001B[39mTC \u001B]8;;https://btc.example\u0007link\u001B]8;;\u0007';
    expect(markMatches(styled, pattern, true)).toBe(
      '\u001B[31m\u001B[1;4mB\u001B[39mTC\u001B[22;24m \u001B]8;;https://btc.example\u0007link\u001B]8;;\u0007',
    );
    expect(markMatches('nothing here', pattern, true)).toBe('nothing here');
    expect(markMatches('abc', compilePattern('x*'), true)).toBe('abc');
  });

  it('filters by mute and solo, and searches case-insensitively by regex over the whole buffer', () => {
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('Fed holds rates'), false);
    model.add(post('whale moved', { streamId: 'whale', streamName: 'Whale' }), false);
    model.add(post('fed speaks'), false);
    model.toggleMute('macro-wire');
    expect(texts(model)).toEqual(['whale moved']);
    model.toggleMute('macro-wire');
    model.toggleSolo('macro-wire');
    expect(texts(model)).toEqual(['fed speaks', 'Fed holds rates']);
    model.toggleSolo('macro-wire');
    model.setSearch('FED (h|s)');
    expect(texts(model)).toEqual(['fed speaks', 'Fed holds rates']);
    model.nextMatch(1);
    expect(model.selected()?.text).toBe('Fed holds rates');
    model.nextMatch(1);
    expect(model.selected()?.text).toBe('fed speaks');
    // An unfinished pattern keeps the last good one and says so.
    model.setSearch('FED (');
    expect(texts(model)).toHaveLength(2);
    expect(model.searchError).toBe('Unterminated group');
    model.clearSearch();
    expect(texts(model)).toHaveLength(3);
  });

  it('pauses: the list stops moving and counts what arrives', () => {
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('one'), false);
    model.togglePause();
    model.add(post('two'), false);
    model.add(post('three'), false);
    expect(texts(model)).toEqual(['one']);
    expect(model.newSincePause).toBe(2);
    model.togglePause();
    expect(texts(model)).toEqual(['three', 'two', 'one']);
  });

  it('a search finds a page of rows at once and counts the rest when asked, posts coming and going meanwhile', () => {
    const model = new TerminalModel({ capacity: 100 });
    for (let index = 0; index < 90; index++)
      model.add(post(index % 3 === 0 ? `Whale ${index}` : `other ${index}`), false);
    model.setSearch('WHALE');
    // A frame of the list asks for its rows: the newest matches, the count not yet known.
    expect(
      model
        .firstRows(5)
        .slice(0, 5)
        .map((entry) => entry.text),
    ).toEqual(['Whale 87', 'Whale 84', 'Whale 81', 'Whale 78', 'Whale 75']);
    expect(model.rowCount()).toBeUndefined();
    expect(model.finishRows()).toBe(true);
    expect(model.rowCount()).toBe(30);
    expect(model.finishRows()).toBe(false);
    // Posts arriving are counted without trying the others again; the oldest go at the capacity.
    for (let index = 90; index < 120; index++)
      model.add(post(index % 3 === 0 ? `whale ${index}` : `other ${index}`), false);
    expect(model.rowCount()).toBe(33);
    expect(model.rows().at(-1)?.text).toBe('Whale 21');
    // A post arriving before the count was finished: the count waits for it.
    model.setSearch('whale 1');
    expect(model.firstRows(1)[0]?.text).toBe('whale 117');
    model.add(post('whale 1 more'), false);
    expect(model.rowCount()).toBeUndefined();
    expect(model.finishRows()).toBe(true);
    expect(model.rows().map((entry) => entry.text)).toEqual([
      'whale 1 more',
      'whale 117',
      'whale 114',
      'whale 111',
      'whale 108',
      'whale 105',
      'whale 102',
    ]);
    expect(model.rowCount()).toBe(7);
    // An unfinished pattern keeps the rows: nothing to count again.
    model.setSearch('whale 1(');
    expect(model.rowCount()).toBe(7);
    // Esc: the whole feed.
    model.clearSearch();
    expect(model.rows()).toHaveLength(100);
  });

  it('n, N, PgDn and G past the first page of matches, paused, muted and pinned', () => {
    const model = new TerminalModel({ capacity: 200 });
    for (let index = 0; index < 100; index++)
      model.add(post(`match ${index}`, index % 4 === 0 ? { streamId: 'whale', streamName: 'Whale' } : {}), false);
    model.togglePause();
    for (let index = 100; index < 150; index++) model.add(post(`match ${index}`), false);
    model.toggleMute('whale');
    model.setSearch('match');
    // A page of 10, as a frame draws it.
    model.firstRows(10);
    const page = model.firstRows(10).slice(0, 10);
    expect(page[0]?.text).toBe('match 99');
    for (let step = 0; step < 9; step++) model.nextMatch(1);
    expect(model.selected()).toBe(page[9]);
    model.nextMatch(1);
    expect(model.selected()?.text).toBe('match 86');
    model.nextMatch(-1);
    expect(model.selected()).toBe(page[9]);
    model.togglePin();
    expect(model.pinned()).toEqual([page[9]]);
    model.move(20);
    expect(model.selectedIndex()).toBe(29);
    expect(model.selected()?.text).toBe('match 61');
    model.bottom();
    expect(model.selected()?.text).toBe('match 1');
    // n from the oldest match goes round to the newest; N from the newest to the oldest.
    model.nextMatch(1);
    expect(model.selectedIndex()).toBe(0);
    model.setSearch('match 9');
    expect(model.rowCount()).toBeUndefined();
    model.nextMatch(-1);
    expect(model.selected()?.text).toBe('match 9');
    expect(model.rowCount()).toBe(9);
    model.nextMatch(1);
    expect(model.selected()?.text).toBe('match 99');
  });

  it('rows found a page at a time are the rows found at once, whatever happens between', () => {
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % below;
    };
    // One clock for both: an entry keeps when it arrived.
    const now = () => 1_767_300_000_000;
    const lazy = new TerminalModel({ capacity: 60, now });
    const eager = new TerminalModel({ capacity: 60, now });
    const both = (step: (model: TerminalModel) => void) => {
      step(lazy);
      step(eager);
      eager.rows();
    };
    for (let round = 0; round < 600; round++) {
      const choice = random(12);
      if (choice < 5) {
        const fields = random(3) === 0 ? { streamId: 'whale', streamName: 'Whale' } : {};
        const made = post(`${['alpha', 'beta', 'gamma'][random(3)]} ${round}`, fields);
        both((model) => model.add(made, false));
      } else if (choice === 5) {
        const text = ['', 'a', 'alpha', 'b|g', 'whale', 'alpha('][random(6)]!;
        both((model) => model.setSearch(text));
      } else if (choice === 6) both((model) => model.togglePause());
      else if (choice === 7) both((model) => model.toggleMute('whale'));
      else if (choice === 8) {
        const direction = random(2) === 0 ? 1 : -1;
        both((model) => model.nextMatch(direction));
      } else if (choice === 9) {
        const delta = [1, -1, 10, -10, 1000][random(5)]!;
        both((model) => model.move(delta));
      } else if (choice === 10) lazy.firstRows(1 + random(12));
      else lazy.finishRows();
      expect(lazy.selectedIndex()).toBe(eager.selectedIndex());
      expect(lazy.firstRows(12).slice(0, 12)).toEqual(eager.rows().slice(0, 12));
      const count = lazy.rowCount();
      if (count !== undefined) expect(count).toBe(eager.rows().length);
    }
    expect(lazy.rows()).toEqual(eager.rows());
  });

  it('sanitizes what the network names: stream ids, looked-up names, close reasons, messages', () => {
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('a', { streamId: 'w\u001B]0;T\u0007x', streamName: 'w\u001B]0;T\u0007x' }), false);
    model.knowStream('w\u001B]0;T\u0007x', 'N\u001B]52;c;cHduZWQ=\u0007\u202Eame');
    // A removed control or invisible character is shown as a space, as everywhere text is shown.
    expect(model.streams()).toEqual([{ id: 'w ]0;T x', name: 'N ]52;c;cHduZWQ= ame', count: 1 }]);
    model.setConnection({ kind: 'closed', reason: 'bye\u001B[2J\u009B2J' });
    expect(model.connection).toEqual({ kind: 'closed', reason: 'bye [2J 2J' });
    model.say('opened https://a.example/\u0007\u001B[?1049l');
    expect(model.message).toBe('opened https://a.example/ [?1049l');
  });

  it('pins the selected post above the feed', () => {
    const model = new TerminalModel({ capacity: 10 });
    for (const text of ['a', 'b', 'c']) model.add(post(text), false);
    model.bottom();
    model.togglePin();
    expect(model.pinned().map((entry) => entry.text)).toEqual(['a']);
    model.togglePin();
    expect(model.pinned()).toEqual([]);
  });

  it('holds pins apart from the buffer: eviction keeps them, --max-pins lets the oldest go', () => {
    const rules = compileRules([{ name: 'profile rule 1', rule: { match: 'whale', action: 'pin' } }]);
    const model = new TerminalModel({ capacity: 3, maxPins: 2, rules });
    const hidden = post(null, { releaseAt: new Date(60_000).toISOString() });
    model.add(hidden, false);
    model.togglePin();
    model.add(post('whale one'), false);
    for (const text of ['b', 'c', 'd', 'e']) model.add(post(text), false);
    expect(texts(model)).toEqual(['e', 'd', 'c']);
    expect(model.pinned().map((entry) => entry.text)).toEqual(['whale one', null]);
    expect(model.pinCount).toBe(2);
    expect(model.alertOf(model.pinned()[0]!.id)?.action).toBe('pin');
    // The release of a pin the buffer let go: the pin shows the text, the feed has it on top.
    model.add({ ...hidden, text: 'released', hidden: false }, false);
    expect(model.pinned().map((entry) => entry.text)).toEqual(['whale one', 'released']);
    expect(texts(model)).toEqual(['released', 'e', 'd']);
    model.add(post('whale two'), false);
    expect(model.pinned().map((entry) => entry.text)).toEqual(['whale two', 'whale one']);
    model.togglePin();
    expect(model.pinned().map((entry) => entry.text)).toEqual(['whale one']);
    model.move(1);
    model.togglePin();
    expect(model.message).toBeUndefined();
    expect(model.pinned().map((entry) => entry.text)).toEqual(['released', 'whale one']);
    model.move(1);
    model.togglePin();
    expect(model.pinned().map((entry) => entry.text)).toEqual(['e', 'released']);
    expect(model.message).toBe('pinned; the oldest pin was let go (--max-pins 2)');
    expect(() => new TerminalModel({ capacity: 3, maxPins: 0 })).toThrow(RangeError);
  });

  it('a rule matches what the reader reads (text, headline, links); streams narrows it; field "stream" tries the name', () => {
    const rules = compileRules([
      { name: 'profile rule 1', rule: { match: 'whale', streams: ['whale-alerts'], action: 'pin' } },
      { name: 'profile rule 2', rule: { match: '^macro', field: 'stream', action: 'highlight' } },
      { name: 'profile rule 3', rule: { match: 'SEC approves', action: 'bell' } },
    ]);
    const model = new TerminalModel({ capacity: 10, rules });
    const whales = { streamId: 'whale-alerts', streamName: 'Whale Alerts' };
    model.add(post('500 BTC moved', whales), false);
    model.add(post('a whale moved 500 BTC', whales), false);
    model.add(post('whale spotted', { streamId: 'crypto-legal', streamName: 'Crypto Legal' }), false);
    model.add(post('rates held'), false);
    model.add(
      post('**SEC** approves', { contentType: 'markdown', streamId: 'crypto-legal', streamName: 'Legal' }),
      false,
    );
    const actions = model.rows().map((entry) => [entry.text, model.alertOf(entry.id)?.name]);
    expect(actions).toEqual([
      ['**SEC** approves', 'profile rule 3'],
      ['rates held', 'profile rule 2'],
      ['whale spotted', undefined],
      ['a whale moved 500 BTC', 'profile rule 1'],
      ['500 BTC moved', undefined],
    ]);
  });

  it('acts on the first alert rule that matches; history is marked but rings nothing', () => {
    const rules = compileRules([
      { name: '--alert 1', rule: { match: 'sec', action: 'bell' } },
      { name: 'profile rule 1', rule: { match: 'sec|spam', action: 'mute' } },
      { name: 'profile rule 2', rule: { match: 'btc', action: 'pin', streams: ['whale'] } },
    ]);
    const model = new TerminalModel({ capacity: 10, rules });
    expect(model.add(post('SEC sues'), false).map((effect) => effect.action)).toEqual(['bell']);
    expect(model.add(post('SEC history'), true)).toEqual([]);
    expect(model.add(post('spam'), false)).toEqual([]);
    model.add(post('btc on macro'), false);
    model.add(post('btc moved', { streamId: 'whale', streamName: 'Whale' }), false);
    expect(texts(model)).not.toContain('spam');
    expect(model.mutedByRule).toBe(1);
    expect(model.pinned().map((entry) => entry.text)).toEqual(['btc moved']);
    expect(model.rules.map((rule) => model.alertCount(rule))).toEqual([2, 1, 1]);
  });

  it('a bad pattern or an exec rule without a command is refused, naming the rule', () => {
    expect(() => compileRules([{ name: 'profile rule 3', rule: { match: '(', action: 'bell' } }])).toThrow(
      /alert rule profile rule 3: not a valid regular expression/,
    );
    try {
      compileRules([{ name: '--alert 1', rule: { match: 'x', action: 'exec' } }]);
      expect.unreachable();
    } catch (error) {
      expect((error as AlertRuleError).code).toBe('invalid-alert-rule');
    }
  });
});

describe('rows and text', () => {
  it('a headline is the first line with its markdown marks taken out, and no control characters', () => {
    expect(headlineOf('\n\n# **Fed** holds [rates](https://x.example)\nmore', true)).toBe('Fed holds rates');
    expect(headlineOf('a\u001B]0;title\u0007b\u009B2J', false)).toBe('a ]0;title b 2J');
    expect(linksOf('see https://a.example/x, and https://b.example and https://a.example/x', false)).toEqual([
      'https://a.example/x',
      'https://b.example',
    ]);
  });

  it('a row is exactly as wide as the screen, wide characters and emoji counted as tmux draws them', () => {
    expect(cells('中文')).toBe(4);
    expect(cells('👍🏽')).toBe(4);
    expect(cells(fitText('中文字符中文字符', 7))).toBeLessThanOrEqual(7);
    const model = new TerminalModel({ capacity: 10 });
    model.add(post('表情 😀👍🏽 中文字符 wide and a long line that goes on and on and on and on and on'), false);
    for (const width of [60, 61, 80, 120]) {
      const row = formatRow(model.rows()[0]!, {
        width,
        color: false,
        utc: true,
        selected: false,
        theme: THEMES.dark,
        age: undefined,
        now: undefined,
        alert: undefined,
        pinned: false,
        released: false,
        search: undefined,
        streamWidth: 12,
      });
      expect(cells(row)).toBe(width);
    }
  });

  it('keys read together are taken one by one; a sequence is one key', () => {
    expect(parseKeys('m\r')).toEqual([
      ['m', {}],
      ['', { return: true }],
    ]);
    expect(parseKeys('j')).toEqual([['j', {}]]);
    expect(parseKeys('\u001B[B\u001BOA\u001B[6~\u001B[1;5H')).toEqual([
      ['', { downArrow: true }],
      ['', { upArrow: true }],
      ['', { pageDown: true }],
      ['', { home: true }],
    ]);
    expect(parseKeys('\u001B\u001B\u0003\u007F😀')).toEqual([
      ['', { escape: true }],
      ['', { escape: true }],
      ['c', { ctrl: true }],
      ['', { backspace: true }],
      ['😀', {}],
    ]);
    // A key not used here (F5, an arrow sideways) is none.
    expect(parseKeys('\u001B[15~\u001B[C')).toEqual([]);
    // A sequence cut between two reads waits for its end; a lone Escape does not.
    expect(splitUnfinished('j\u001B[1;')).toEqual(['j', '\u001B[1;']);
    expect(splitUnfinished('j\u001BO')).toEqual(['j', '\u001BO']);
    expect(splitUnfinished('j\u001B')).toEqual(['j\u001B', '']);
    expect(splitUnfinished('\u001B[B')).toEqual(['\u001B[B', '']);
  });

  it('the footer names only keys the ? list has, and each does what the list says', () => {
    expect(FOOTERS).toEqual([
      'j/k move  Enter detail  / search  f streams  t coin  M mute source  space pause  o open  p pin  a alerts  c columns  ? keys  q quit',
      'j/k move  Enter detail  / search  f streams  space pause  o open  p pin  a alerts  c columns  ? keys  q quit',
      'j/k move  Enter detail  / search  f streams  space pause  o open  ? keys  q quit',
      'j/k  Enter detail  / search  f streams  ? keys  q quit',
    ]);
    const listed = new Set(KEY_HELP.flatMap(([keys]) => keys.split(/\s+/)));
    for (const footer of FOOTERS)
      for (const word of footer.split('  ')) expect(listed).toContain(word.split(' ')[0]!.replace('j/k', 'j'));
    const model = new TerminalModel({ capacity: 10, now: () => 0 });
    for (const text of ['one', 'two']) model.add(post(text), false);
    const key = (input: string) => update(model, { kind: 'key', input, key: {}, pageRows: 5 }).effects;
    expect(key('j')).toEqual([]);
    expect(model.selected()?.text).toBe('one');
    expect(key('3')).toEqual([{ kind: 'open', link: 3 }]);
    expect(key('Y')).toEqual([{ kind: 'copy', what: 'text' }]);
    expect(key('?')).toEqual([]);
    expect(model.keys.overlay).toBe('help');
  });

  it('a styled line is cut to the width, its colours and hyperlink ended', () => {
    const link = '\u001B]8;;https://a.example\u0007https://a.example/long/path\u001B]8;;\u0007';
    const line = `\u001B[1m中文\u001B[22m ${link} tail`;
    expect(lineCells(line)).toBe(4 + 1 + 27 + 5);
    expect(fitLine(line, 80)).toBe(line);
    const cut = fitLine(line, 12);
    expect(lineCells(cut)).toBe(12);
    expect(cut).toBe(`\u001B[1m中文\u001B[22m \u001B]8;;https://a.example\u0007https:…\u001B]8;;\u0007\u001B[0m`);
    expect(fitLine('a\tb', 10)).toBe('a    b');
  });

  it('a frame writes only the lines that changed; a new size writes them all', () => {
    const written: string[] = [];
    const writer = new ScreenWriter((data) => written.push(data));
    expect(writer.draw(['head', 'one', '', 'foot'], 10)).toBe(true);
    expect(written[0]).toContain('\u001B[2J');
    expect(writer.draw(['head', 'one', '', 'foot'], 10)).toBe(false);
    writer.draw(['head', 'two', '', 'foot'], 10);
    expect(written[1]).toBe('\u001B[?2026h\u001B[2;1H\u001B[2Ktwo\u001B[?2026l');
    writer.draw(['head', 'two', '', 'foot'], 12);
    expect(written[2]).toContain('\u001B[2J');
    expect(written[2]).toContain('head');
  });

  it('posts are drawn at most 30 times a second, and a slow frame holds the next back 150 ms at most', () => {
    vi.useFakeTimers();
    try {
      let now = 0;
      const store = new FrameStore(() => now);
      const frames: number[] = [];
      store.subscribe(() => frames.push(now));
      store.now();
      for (let post = 0; post < 10; post++) store.soon();
      now = 33;
      vi.advanceTimersByTime(33);
      expect(frames).toEqual([0, 33]);
      // A frame that took 100 ms (preempted, or the terminal slow to read) asks for 400: 150 it is.
      store.drawn(100);
      store.soon();
      now = 183;
      vi.advanceTimersByTime(149);
      expect(frames).toHaveLength(2);
      vi.advanceTimersByTime(1);
      expect(frames).toEqual([0, 33, 183]);
    } finally {
      vi.useRealTimers();
    }
  });
});
