import { describe, expect, it } from 'vitest';
import { cashtags, toTreeItem } from '../../src/protocol/tree.js';
import { firstLink } from '../../src/protocol/urls.js';
import { samplePost } from '../support/fixtures.js';

const post = samplePost;

describe('firstLink', () => {
  it.each([
    ['plain https', 'see https://a.b/c now', 'https://a.b/c'],
    ['plain http', 'see http://a.b/c', 'http://a.b/c'],
    ['upper-case scheme', 'HTTPS://A.B/c', 'HTTPS://A.B/c'],
    ['markdown link', 'read [x](https://a.b/c) here', 'https://a.b/c'],
    ['markdown link at end', '[release](https://example.org/cpi)', 'https://example.org/cpi'],
    ['first of two', 'http://one.example https://two.example', 'http://one.example'],
    ['trailing period', 'Filed: https://a.b/c.', 'https://a.b/c'],
    ['trailing comma', 'https://a.b/c, and more', 'https://a.b/c'],
    ['trailing !?', 'wow https://a.b/c?!', 'https://a.b/c'],
    ['trailing markdown emphasis', '**https://a.b/c**', 'https://a.b/c'],
    ['angle brackets', '<https://a.b/c>', 'https://a.b/c'],
    ['in quotes', '"https://a.b/c"', 'https://a.b/c'],
    ['query and fragment kept', 'https://a.b/c?x=1&y=2#top.', 'https://a.b/c?x=1&y=2#top'],
    ['after a newline', 'line\nhttps://example.org/sec-binance', 'https://example.org/sec-binance'],
  ])('%s', (_name, text, expected) => {
    expect(firstLink(text)).toBe(expected);
  });

  it.each([
    ['no URL', 'nothing to see'],
    ['ftp is not http(s)', 'ftp://a.b/c'],
    ['scheme alone', 'https:// is not a link'],
    ['empty text', ''],
  ])('%s → undefined', (_name, text) => {
    expect(firstLink(text)).toBeUndefined();
  });
});

describe('cashtags', () => {
  it.each([
    ['one tag', 'buy $BNB', [{ coin: 'BNB', found: ['$BNB'] }]],
    ['lower case normalised', 'sold $btc', [{ coin: 'BTC', found: ['$btc'] }]],
    ['mixed spellings grouped', '$btc then $BTC', [{ coin: 'BTC', found: ['$btc', '$BTC'] }]],
    ['repeats grouped once', '$ETH $ETH $ETH', [{ coin: 'ETH', found: ['$ETH'] }]],
    [
      'order of first appearance',
      '$SOL up, $BTC down, $sol again',
      [
        { coin: 'SOL', found: ['$SOL', '$sol'] },
        { coin: 'BTC', found: ['$BTC'] },
      ],
    ],
    [
      'punctuation around',
      '($BNB), $ETH.',
      [
        { coin: 'BNB', found: ['$BNB'] },
        { coin: 'ETH', found: ['$ETH'] },
      ],
    ],
    ['letters then digits', '$1INCH no, $C98 yes', [{ coin: 'C98', found: ['$C98'] }]],
    ['ten characters', '$ABCDEFGHIJ', [{ coin: 'ABCDEFGHIJ', found: ['$ABCDEFGHIJ'] }]],
    ['$100 is money', 'raised $100 million', []],
    ['US$5 is money', 'costs US$5 each', []],
    ['$$ is not a tag', 'pay $$BTC', []],
    ['inside a word', 'a$BTC', []],
    ['eleven characters is not a ticker', '$ABCDEFGHIJK', []],
    ['none', 'no tags here', []],
    ['inside a URL is an address', 'see https://x.org/$BTC and $ETH', [{ coin: 'ETH', found: ['$ETH'] }]],
  ])('%s', (_name, text, expected) => {
    expect(cashtags(text)).toEqual(expected);
  });
});

describe('toTreeItem', () => {
  it('gives every field of the PROTOCOL.md B3 example', () => {
    // The B3 example's `time` (1795262400000) is 2026-11-21T12:00:00Z.
    const text = 'SEC v. Binance: stipulation of dismissal filed, $BNB https://example.org/first-url-in-the-text';
    const item = toTreeItem(post({ text, createdAt: '2026-11-21T12:00:00.000Z' }));
    expect(item).toEqual({
      _id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
      title: 'Crypto Legal Updates',
      body: text,
      en: text,
      source: 'Crypto Legal Updates',
      link: 'https://example.org/first-url-in-the-text',
      time: 1795262400000,
      coin: 'BNB',
      suggestions: [{ coin: 'BNB', found: ['$BNB'] }],
      type: 'stream-post',
      contentType: 'markdown',
      streamId: '01J366WJBXF6BN036SXVNRAP8A',
      hidden: false,
    });
  });

  it.each([
    ['2026-11-21T12:00:00.000Z', Date.UTC(2026, 10, 21, 12)],
    ['1970-01-01T00:00:00.000Z', 0],
    ['2026-01-02T03:04:05.678Z', Date.UTC(2026, 0, 2, 3, 4, 5, 678)],
  ])('time of %s is %d epoch ms', (createdAt, time) => {
    expect(toTreeItem(post({ createdAt })).time).toBe(time);
  });

  it('omits link, coin and suggestions when the text has none', () => {
    const item = toTreeItem(post({ text: 'plain words' }));
    expect(item.body).toBe('plain words');
    expect(item).not.toHaveProperty('link');
    expect(item).not.toHaveProperty('coin');
    expect(item).not.toHaveProperty('suggestions');
  });

  it('takes coin from the first of several cashtags', () => {
    const item = toTreeItem(post({ text: '$eth leads, $BTC follows, $ETH again' }));
    expect(item.coin).toBe('ETH');
    expect(item.suggestions).toEqual([
      { coin: 'ETH', found: ['$eth', '$ETH'] },
      { coin: 'BTC', found: ['$BTC'] },
    ]);
  });

  it.each([
    ['hidden with text (publisher copy)', { hidden: true, text: '$BTC https://leak.example/x' }],
    ['hidden with null text', { hidden: true, text: null }],
  ])('%s → empty body, no link or coin', (_name, change) => {
    const item = toTreeItem(post({ ...change, releaseAt: '2026-12-01T00:00:00.000Z' }));
    expect(item.body).toBe('');
    expect(item.en).toBe('');
    expect(item.hidden).toBe(true);
    expect(item).not.toHaveProperty('link');
    expect(item).not.toHaveProperty('coin');
    expect(item).not.toHaveProperty('suggestions');
    expect(JSON.stringify(item)).not.toContain('leak');
  });

  it('a released post carries its body with the same _id', () => {
    const hidden = toTreeItem(post({ hidden: true, text: null }));
    const released = toTreeItem(post({ hidden: false, text: 'now $SOL' }));
    expect(released._id).toBe(hidden._id);
    expect(released).toMatchObject({ body: 'now $SOL', en: 'now $SOL', hidden: false, coin: 'SOL' });
  });

  it('keeps contentType rawtext', () => {
    expect(toTreeItem(post({ contentType: 'rawtext' })).contentType).toBe('rawtext');
  });
});
