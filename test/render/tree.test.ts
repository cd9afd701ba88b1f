import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { toTreeItem } from '../../src/protocol/tree.js';
import { formatTreeItem } from '../../src/render/tree.js';
import { samplePost } from '../support/fixtures.js';
import foreign from './fixtures/foreign-tree-items.json' with { type: 'json' };

const ESC = /\u001B/;
const OSC8 = /\u001B\]8;;https?:\/\/[^\u0007]+\u0007/;
// "Today" is the day of the sample item, so its time shows without a date.
const sameDay = () => 1763726400000;
const plain = { color: false, hyperlinks: false, now: sameDay };
const coloured = { color: true, hyperlinks: false, now: sameDay };
const linked = { color: true, hyperlinks: true, now: sameDay };
const localTime = (epochMs: number) => new Date(epochMs).toTimeString().slice(0, 8);
const fixtures: Record<string, Record<string, unknown>> = foreign;

const ours = toTreeItem(
  samplePost({
    text: 'SEC v. Binance: **stipulation** of dismissal filed $BNB https://example.org/first-url-in-the-text',
    createdAt: '2025-11-21T12:00:00.000Z',
  }),
) as unknown as Record<string, unknown>;

describe('formatTreeItem on our items (PROTOCOL.md B3)', () => {
  it('plain: time, source once, body, coins, and no escape at all; the link is in the body already', () => {
    expect(formatTreeItem(ours, plain)).toBe(
      [
        `${localTime(1763726400000)} [Crypto Legal Updates]`,
        'SEC v. Binance: **stipulation** of dismissal filed $BNB https://example.org/first-url-in-the-text',
        '$BNB',
      ].join('\n'),
    );
    // A body that does not show it: the link gets a line of its own.
    expect(formatTreeItem({ ...ours, body: 'see the filing' }, plain).split('\n')).toEqual([
      `${localTime(1763726400000)} [Crypto Legal Updates]`,
      'see the filing',
      'https://example.org/first-url-in-the-text',
      '$BNB',
    ]);
  });

  it('colour: an inverse badge, the markdown renderer for the body, coloured coins', () => {
    const text = formatTreeItem(ours, { ...coloured, markdown: (md) => `<md>${md}</md>` });
    expect(text).toMatch(/\u001B\[7m Crypto Legal Updates /);
    expect(text).toContain('<md>SEC v. Binance: **stipulation**');
    expect(text).toContain('\u001B[33m$BNB\u001B[39m');
    expect(text).not.toMatch(OSC8);
  });

  it('the markdown renderer is not used for rawtext; it is used without colour (NO_COLOR on a terminal)', () => {
    const markdown = () => 'RENDERED';
    expect(formatTreeItem({ ...ours, contentType: 'rawtext' }, { ...coloured, markdown })).not.toContain('RENDERED');
    expect(formatTreeItem(ours, { ...plain, markdown })).toContain('RENDERED');
  });

  it('hyperlinks: the link is an OSC 8 hyperlink to the full URL, only when asked', () => {
    const text = formatTreeItem(ours, linked);
    expect(text).toContain('\u001B]8;;https://example.org/first-url-in-the-text\u0007');
    expect(text).toMatch(OSC8);
    expect(formatTreeItem(ours, coloured)).not.toMatch(OSC8);
    expect(formatTreeItem(ours, { ...plain, hyperlinks: true })).not.toMatch(ESC);
  });

  it('a hidden item shows a locked line instead of its body', () => {
    const hidden = toTreeItem(
      samplePost({ hidden: true, text: null, releaseAt: '2030-01-01T00:00:00.000Z' }),
    ) as unknown as Record<string, unknown>;
    expect(formatTreeItem(hidden, plain).split('\n')).toEqual([
      expect.stringContaining('[Crypto Legal Updates]'),
      '[locked until 2030-01-01T00:00:00.000Z]',
    ]);
    const text = formatTreeItem(hidden, { ...coloured, utc: true });
    expect(text).toContain('🔒 locked until 2030-01-01 00:00:00 UTC');
    expect(text).not.toContain('SEC v. Binance');
    // An item of another feed that says nothing of its release.
    expect(formatTreeItem({ ...hidden, releaseAt: undefined }, coloured)).toContain('🔒 locked until release');
  });

  it('a post that is only a URL shows it once; so does a markdown link where there are no hyperlinks', () => {
    const url = 'https://example.org/only';
    const only = toTreeItem(samplePost({ contentType: 'rawtext', text: url })) as unknown as Record<string, unknown>;
    for (const view of [plain, coloured, linked]) {
      const shown = stripVTControlCharacters(formatTreeItem(only, view));
      expect(shown.split(url.replace('https://', ''))).toHaveLength(2);
    }
    const linkedText = toTreeItem(samplePost({ text: `[the filing](${url})` })) as unknown as Record<string, unknown>;
    const markdown = (md: string) => md.replace(/\[(.*)\]\((.*)\)/, '$1 ($2)');
    const shown = stripVTControlCharacters(formatTreeItem(linkedText, { ...coloured, markdown }));
    expect(shown.split('\n').slice(1)).toEqual([`the filing (${url})`]);
  });

  it("a URL inside a code block or code span is not the item's link", () => {
    const text =
      'Call it like this:\n\n```sh\ncurl https://api.example/v1\n```\n\nor `https://api.example/v2`; details at https://docs.example/x.';
    expect(toTreeItem(samplePost({ text })).link).toBe('https://docs.example/x');
    expect(toTreeItem(samplePost({ text: '```\nhttps://api.example/v1\n```' })).link).toBeUndefined();
    // In rawtext, backticks are just characters.
    expect(toTreeItem(samplePost({ contentType: 'rawtext', text: '`https://api.example/v2`' })).link).toBe(
      'https://api.example/v2',
    );
  });

  it('a released item is dated at its release, not at its creation', () => {
    const post = samplePost({ releaseAt: '2026-11-21T15:30:00.000Z', createdAt: '2026-11-21T12:00:00.000Z' });
    const item = toTreeItem(post) as unknown as Record<string, unknown>;
    const view = { ...plain, utc: true, now: () => Date.parse('2026-11-21T16:00:00.000Z') };
    expect(formatTreeItem(item, view, 'released').split('\n')[0]).toBe(
      '15:30:00 UTC [Crypto Legal Updates] [released]',
    );
    expect(formatTreeItem(item, view).split('\n')[0]).toBe('12:00:00 UTC [Crypto Legal Updates]');
  });

  it('--match highlights matches in title and body with colour, and changes nothing without', () => {
    const item = { ...ours, title: 'Dismissal news', contentType: 'rawtext' };
    const text = formatTreeItem(item, { ...coloured, match: /dismissal/i });
    expect(text).toContain('\u001B[7mDismissal\u001B[27m news');
    expect(text).toContain('of \u001B[7mdismissal\u001B[27m filed');
    expect(formatTreeItem(item, { ...plain, match: /dismissal/i })).toBe(formatTreeItem(item, plain));
  });

  it('control characters in a field cannot reach the terminal', () => {
    const text = formatTreeItem({ ...ours, title: 'evil\u001B]0;pwned\u0007 title', body: 'a\u001B[2Jb\r\nc' }, plain);
    expect(text).not.toMatch(/[\u0000-\u0009\u000B-\u001F]/);
    expect(text).toContain('evil ]0;pwned title');
    expect(text).toContain('a [2Jb\nc');
  });
});

describe('formatTreeItem on items of other feeds', () => {
  const cases: [name: string, lines: string[]][] = [
    [
      'tweet-quote',
      [
        `${localTime(1713200000000)} Binance (@binance) (quote of @cz_binance)`,
        'Binance will list $WIF on spot trading. https://t.co/Abc123',
        'https://twitter.com/binance/status/1780012345678901234',
      ],
    ],
    [
      'tweet-reply-retweet',
      [
        `${localTime(1713200001000)} Vitalik Buterin (@VitalikButerin) (retweet) (reply)`,
        'Agreed, layer 2s are the way.',
        'https://twitter.com/VitalikButerin/status/1780012345678900000',
      ],
    ],
    [
      'blogs-news',
      [
        `${localTime(1713201000000)} [Blogs] Coinbase: Introducing Base Names`,
        'https://www.coinbase.com/blog/introducing-base-names',
        '$ETH $COIN',
      ],
    ],
    [
      'binance-listing',
      [
        `${localTime(1713202000000)} [Binance EN] Binance Will List dogwifhat (WIF) with Seed Tag Applied`,
        'https://www.binance.com/en/support/announcement/binance-will-list-dogwifhat-wif-with-seed-tag-applied-2b8a3f',
        '$WIF $WIFUSDT',
      ],
    ],
    [
      'upbit-korean-with-en',
      [
        `${localTime(1713203000000)} [Upbit] [거래] 도그위프햇(WIF) 원화 마켓 디지털 자산 추가`,
        '[Trade] dogwifhat (WIF) KRW market digital asset addition',
        'https://upbit.com/service_center/notice?id=4187',
        '$WIF',
      ],
    ],
    ['missing-title', [`${localTime(1713204000000)} [Upbit]`, 'Deposit and withdrawal suspension for network upgrade']],
    ['missing-body', [`${localTime(1713205000000)} [OKX] OKX to delist BTT spot pairs`, '$BTT']],
    ['time-in-seconds', [`${localTime(1713206000000)} [Bybit] Bybit lists TNSR perpetual`, '$TNSR']],
    [
      'time-as-iso-string',
      [
        `${localTime(Date.parse('2024-04-15T17:00:00.000Z'))} [Coinbase] Coinbase adds support for W`,
        'https://x.com/CoinbaseAssets/status/1780000000000000001',
        '$W',
      ],
    ],
    ['junk-types', ['--:--:-- 42', '$BTC']],
    ['empty', ['--:--:--']],
  ];

  it('has a case for every fixture', () => {
    expect(cases.map(([name]) => name).sort()).toEqual(Object.keys(fixtures).sort());
  });

  it.each(cases)('%s (plain)', (name, lines) => {
    // "Today" is the day the item was published, so its time shows without a date.
    const time = fixtures[name]!['time'];
    const at = typeof time === 'number' ? (time < 1e12 ? time * 1000 : time) : Date.parse(String(time));
    expect(formatTreeItem(fixtures[name]!, { ...plain, now: () => (Number.isNaN(at) ? 0 : at) })).toBe(
      lines.join('\n'),
    );
  });

  it.each(Object.keys(fixtures))('%s renders in colour with hyperlinks, links only to web URLs', (name) => {
    const text = formatTreeItem(fixtures[name]!, linked);
    expect(text).not.toContain('javascript:');
    expect(text).not.toContain('pbs.twimg.com');
    const link = fixtures[name]!['link'] ?? fixtures[name]!['url'];
    if (typeof link === 'string' && link.startsWith('https://')) expect(text).toContain(`\u001B]8;;${link}\u0007`);
    else expect(text).not.toMatch(OSC8);
  });

  it('a long link is shortened on screen but complete in the hyperlink', () => {
    const url = fixtures['binance-listing']!['url'] as string;
    const text = formatTreeItem(fixtures['binance-listing']!, linked);
    expect(text).toContain(`\u001B]8;;${url}\u0007`);
    expect(text).toContain('www.binance.com/en/support/announcement/binance-will-list-d…');
  });

  it('never throws, whatever the object holds', () => {
    const odd: Record<string, unknown>[] = [
      { time: Number.NaN },
      { time: 1e300 },
      { time: -5 },
      { title: '   ', source: '', body: '' },
      { suggestions: [null, 1, 'BTC', { coin: 5 }, { coin: ' $eth ' }] },
      { info: { isQuote: true, quotedUser: { screen_name: 'x' } } },
      { link: 'https://a.example/\u0007\u001B]8;;evil' },
      null as unknown as Record<string, unknown>,
      [] as unknown as Record<string, unknown>,
    ];
    for (const item of odd) {
      for (const view of [plain, coloured, linked]) expect(() => formatTreeItem(item, view)).not.toThrow();
    }
    expect(formatTreeItem({ suggestions: [null, 1, 'BTC', { coin: 5 }, { coin: ' $eth ' }] }, plain)).toBe(
      '--:--:--\n$ETH',
    );
    expect(formatTreeItem({ info: { isQuote: true, quotedUser: { screen_name: 'x' } } }, plain)).toBe(
      '--:--:-- (quote)',
    );
  });

  it.each(Object.keys(fixtures))('%s has no escape sequence at all when plain', (name) => {
    expect(formatTreeItem(fixtures[name]!, { ...plain, hyperlinks: true, match: /a/ })).not.toMatch(ESC);
  });
});

describe('formatTreeItem, released', () => {
  const item = {
    _id: 'p1',
    title: 'Crypto Legal Updates',
    source: 'Crypto Legal Updates',
    body: 'now public',
    time: 1763726400000,
    hidden: false,
  };

  it('marks the re-send of a locked item as its release, and only then', () => {
    const view = { color: false, hyperlinks: false };
    expect(formatTreeItem(item, view, 'released').split('\n')[0]).toMatch(/\[released\]$/);
    expect(formatTreeItem(item, view)).not.toContain('released');
  });
});
