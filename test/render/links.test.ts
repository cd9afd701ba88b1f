import { beforeAll, describe, expect, it } from 'vitest';
import { toTreeItem } from '../../src/protocol/tree.js';
import { headlineOf, linksOf } from '../../src/render/links.js';
import { loadMarkdownRenderer, type MarkdownRenderer } from '../../src/render/markdown.js';
import { formatPost } from '../../src/render/posts.js';
import { formatTreeItem } from '../../src/render/tree.js';
import { samplePost } from '../support/fixtures.js';
import { codePoint, UNSAFE_CHARACTERS } from '../support/unsafe-characters.js';

/** OSC 8 targets in rendered text: what the reader's terminal would open. */
const targets = (rendered: string): string[] =>
  [...rendered.matchAll(/\u001B\]8;;([^\u0007]*)\u0007/g)].map((match) => match[1]!).filter((url) => url !== '');

/** Addresses as news posts carry them, each in the words around it, and the address a reader means. */
const IN_PLAIN_TEXT: [text: string, address: string][] = [
  [
    'See https://en.wikipedia.org/wiki/Bitcoin_(disambiguation).',
    'https://en.wikipedia.org/wiki/Bitcoin_(disambiguation)',
  ],
  [
    '(background: https://en.wikipedia.org/wiki/Terra_(blockchain)#Collapse)',
    'https://en.wikipedia.org/wiki/Terra_(blockchain)#Collapse',
  ],
  [
    'USDT (https://en.wikipedia.org/wiki/Tether_(cryptocurrency)), the largest',
    'https://en.wikipedia.org/wiki/Tether_(cryptocurrency)',
  ],
  [
    'Fed: https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)',
    'https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)',
  ],
  ['Mt. Gox history https://en.wikipedia.org/wiki/Mt._Gox.', 'https://en.wikipedia.org/wiki/Mt._Gox'],
  [
    'https://en.wikipedia.org/wiki/2008_financial_crisis#Causes, again',
    'https://en.wikipedia.org/wiki/2008_financial_crisis#Causes',
  ],
  ['Geschichte: https://de.wikipedia.org/wiki/Bitcoin#Geschichte!', 'https://de.wikipedia.org/wiki/Bitcoin#Geschichte'],
  ['日本語: https://ja.wikipedia.org/wiki/ビットコイン。', 'https://ja.wikipedia.org/wiki/ビットコイン'],
  [
    '13F filed https://www.sec.gov/Archives/edgar/data/1067983/000095017025000001/xslForm13F_X02/primary_doc.xml',
    'https://www.sec.gov/Archives/edgar/data/1067983/000095017025000001/xslForm13F_X02/primary_doc.xml',
  ],
  [
    '10-K: https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm.',
    'https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm',
  ],
  [
    'Index <https://www.sec.gov/Archives/edgar/data/1679788/000167978825000012/0001679788-25-000012-index.htm>',
    'https://www.sec.gov/Archives/edgar/data/1679788/000167978825000012/0001679788-25-000012-index.htm',
  ],
  [
    '8-Ks: https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0001318605&type=8-K&dateb=&owner=include&count=40;',
    'https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0001318605&type=8-K&dateb=&owner=include&count=40',
  ],
  ['SEC: "https://www.sec.gov/news/press-release/2023-102"', 'https://www.sec.gov/news/press-release/2023-102'],
  [
    'complaint (PDF): https://www.sec.gov/files/litigation/complaints/2023/comp-pr2023-102.pdf)',
    'https://www.sec.gov/files/litigation/complaints/2023/comp-pr2023-102.pdf',
  ],
  ['RT https://x.com/elonmusk/status/1519480761749016577?', 'https://x.com/elonmusk/status/1519480761749016577'],
  [
    'SEC account hacked https://x.com/SECGov/status/1745542138599309583?s=20',
    'https://x.com/SECGov/status/1745542138599309583?s=20',
  ],
  [
    '[https://twitter.com/federalreserve/status/1570770451243012096]',
    'https://twitter.com/federalreserve/status/1570770451243012096',
  ],
  [
    'chart: https://x.com/tier10k/status/1782357829118734592/photo/1 …',
    'https://x.com/tier10k/status/1782357829118734592/photo/1',
  ],
  ['“https://x.com/whale_alert/status/1800000000000000000”', 'https://x.com/whale_alert/status/1800000000000000000'],
  [
    "'https://www.reuters.com/markets/us/fed-holds-rates-steady-2025-01-29/'",
    'https://www.reuters.com/markets/us/fed-holds-rates-steady-2025-01-29/',
  ],
  [
    '**https://www.bloomberg.com/news/articles/2024-01-10/sec-approves-bitcoin-etfs?srnd=premium**',
    'https://www.bloomberg.com/news/articles/2024-01-10/sec-approves-bitcoin-etfs?srnd=premium',
  ],
  [
    'FOMC statement: https://www.federalreserve.gov/newsevents/pressreleases/monetary20250129a.htm:',
    'https://www.federalreserve.gov/newsevents/pressreleases/monetary20250129a.htm',
  ],
  ['CPI https://www.bls.gov/news.release/cpi.nr0.htm (table 1)', 'https://www.bls.gov/news.release/cpi.nr0.htm'],
  [
    'https://www.coindesk.com/policy/2024/01/10/sec-approves-spot-bitcoin-etfs/?utm_source=twitter&utm_medium=social',
    'https://www.coindesk.com/policy/2024/01/10/sec-approves-spot-bitcoin-etfs/?utm_source=twitter&utm_medium=social',
  ],
  [
    'tx: https://etherscan.io/tx/0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060...',
    'https://etherscan.io/tx/0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060',
  ],
  [
    'wallet https://blockchair.com/bitcoin/address/bc1qgdjqv0av3q56jvd82tkdjpy7gdp9ut8tlqmgrpmv24sq90ecnvqqjwvw97\nmoved',
    'https://blockchair.com/bitcoin/address/bc1qgdjqv0av3q56jvd82tkdjpy7gdp9ut8tlqmgrpmv24sq90ecnvqqjwvw97',
  ],
  [
    'Binance will list JUP https://www.binance.com/en/support/announcement/binance-will-list-jupiter-jup-8f8a2b3c',
    'https://www.binance.com/en/support/announcement/binance-will-list-jupiter-jup-8f8a2b3c',
  ],
  [
    'FT (paywall) https://www.ft.com/content/5e3f1b2a-8c4d-4e6f-9a0b-1c2d3e4f5a6b.',
    'https://www.ft.com/content/5e3f1b2a-8c4d-4e6f-9a0b-1c2d3e4f5a6b',
  ],
  [
    'https://www.wsj.com/finance/regulation/sec-crypto-ruling-2024?mod=hp_lead_pos1&',
    'https://www.wsj.com/finance/regulation/sec-crypto-ruling-2024?mod=hp_lead_pos1&',
  ],
  ['HN thread https://news.ycombinator.com/item?id=39000000!', 'https://news.ycombinator.com/item?id=39000000'],
  [
    'live https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s, from minute one',
    'https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s',
  ],
  [
    'DOJ: https://www.justice.gov/opa/pr/binance-and-ceo-plead-guilty-federal-charges-4b-resolution',
    'https://www.justice.gov/opa/pr/binance-and-ceo-plead-guilty-federal-charges-4b-resolution',
  ],
  [
    'OFAC https://home.treasury.gov/news/press-releases/jy1925;',
    'https://home.treasury.gov/news/press-releases/jy1925',
  ],
  [
    'CFTC https://www.cftc.gov/PressRoom/PressReleases/8825-23 «full text»',
    'https://www.cftc.gov/PressRoom/PressReleases/8825-23',
  ],
  [
    'AP https://apnews.com/article/bitcoin-etf-sec-approval-9f3c2d1e0b_',
    'https://apnews.com/article/bitcoin-etf-sec-approval-9f3c2d1e0b',
  ],
  [
    'ECB https://www.ecb.europa.eu/press/pr/date/2025/html/ecb.mp250130~530b29e622.en.html~',
    'https://www.ecb.europa.eu/press/pr/date/2025/html/ecb.mp250130~530b29e622.en.html',
  ],
  [
    'BoE: https://www.bankofengland.co.uk/monetary-policy-summary-and-minutes/2025/february-2025.',
    'https://www.bankofengland.co.uk/monetary-policy-summary-and-minutes/2025/february-2025',
  ],
  [
    'Release https://github.com/bitcoin/bitcoin/releases/tag/v27.0.',
    'https://github.com/bitcoin/bitcoin/releases/tag/v27.0',
  ],
  ['paper https://arxiv.org/abs/2401.01234v2`', 'https://arxiv.org/abs/2401.01234v2'],
  [
    'https://www.msn.com/en-us/money/markets/ar-AA1mN0pQ?ocid=BingNewsSearch>',
    'https://www.msn.com/en-us/money/markets/ar-AA1mN0pQ?ocid=BingNewsSearch',
  ],
  [
    'CNBC https://www.cnbc.com/2025/01/29/fed-rate-decision-january-2025-.html',
    'https://www.cnbc.com/2025/01/29/fed-rate-decision-january-2025-.html',
  ],
  [
    'NASDAQ:COIN http://www.nasdaq.com/market-activity/stocks/coin?',
    'http://www.nasdaq.com/market-activity/stocks/coin',
  ],
  ['{"src":"https://www.theblock.co/post/300000/headline-2025"}', 'https://www.theblock.co/post/300000/headline-2025'],
  [
    '(exclusive, see https://www.reuters.com/technology/(exclusive)-report-2025/)',
    'https://www.reuters.com/technology/(exclusive)-report-2025/',
  ],
  [
    "Satoshi: https://en.wikipedia.org/wiki/Satoshi_Nakamoto's_identity'",
    "https://en.wikipedia.org/wiki/Satoshi_Nakamoto's_identity",
  ],
  [
    'polymarket HTTPS://POLYMARKET.COM/event/fed-decision-in-march?tid=1.',
    'HTTPS://POLYMARKET.COM/event/fed-decision-in-march?tid=1',
  ],
];

/** Markdown as posts write it, and the addresses it links to, in order. */
const IN_MARKDOWN: [markdown: string, addresses: string[]][] = [
  [
    '[Federal Reserve (US)](https://en.wikipedia.org/wiki/Federal_Reserve_(United_States))',
    ['https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)'],
  ],
  ['[Reuters (exclusive)](https://x.example/a-(exclusive)-2025)', ['https://x.example/a-(exclusive)-2025']],
  [
    'See https://en.wikipedia.org/wiki/Bitcoin_(disambiguation). Or [Tether](https://en.wikipedia.org/wiki/Tether_(cryptocurrency)).',
    ['https://en.wikipedia.org/wiki/Bitcoin_(disambiguation)', 'https://en.wikipedia.org/wiki/Tether_(cryptocurrency)'],
  ],
  [
    '[13F](<https://www.sec.gov/Archives/edgar/data/1067983/000095017025000001/xslForm13F_X02/primary doc.xml>)',
    ['https://www.sec.gov/Archives/edgar/data/1067983/000095017025000001/xslForm13F_X02/primary%20doc.xml'],
  ],
  ['<https://x.com/SECGov/status/1745542138599309583?s=20>', ['https://x.com/SECGov/status/1745542138599309583?s=20']],
  [
    '![CPI chart](https://www.bls.gov/charts/cpi.png) and [release](https://www.bls.gov/cpi/)',
    ['https://www.bls.gov/charts/cpi.png', 'https://www.bls.gov/cpi/'],
  ],
  [
    '[filing][1] and [again][1]\n\n[1]: https://www.sec.gov/news/press-release/2023-102',
    ['https://www.sec.gov/news/press-release/2023-102'],
  ],
  ['[statement](https://www.federalreserve.gov/a.htm "FOMC statement")', ['https://www.federalreserve.gov/a.htm']],
  ['`https://example.org/code-not-a-link` and\n\n```\nhttps://example.org/fenced\n```\n', []],
  ['[click](javascript:alert(1)) [mail](mailto:a@b.example) ftp://files.example/x', []],
  [
    '**[SEC](https://www.sec.gov/)**, _https://x.com/a/status/1_.',
    ['https://www.sec.gov/', 'https://x.com/a/status/1'],
  ],
];

/** Markdown first lines and the headline a row shows: marked's tokens, not patterns. */
const HEADLINES: [markdown: string, headline: string][] = [
  ['[Reuters (exclusive)](https://x.example/a-(exclusive)-2025)', 'Reuters (exclusive)'],
  [
    '[Federal Reserve (US)](https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)) holds',
    'Federal Reserve (US) holds',
  ],
  ['\n\n# **Fed** holds [rates](https://x.example)\nmore', 'Fed holds rates'],
  ['> **BREAKING**: SEC approves spot ETFs\n> more', 'BREAKING: SEC approves spot ETFs'],
  ['- first _item_\n- second', 'first item'],
  ['1. **$BTC** up\n2. $ETH down', '$BTC up'],
  ['![CPI chart](https://www.bls.gov/charts/cpi.png) CPI 3.1%', '[image: CPI chart] CPI 3.1%'],
  ['`$BTC` up ~~5%~~ 6%', '$BTC up 5% 6%'],
  ['\\*not emphasis\\* and snake_case_name', '*not emphasis* and snake_case_name'],
  ['Fed <b>holds</b> rates', 'Fed holds rates'],
  ['| Coin | Move |\n|---|---|\n| BTC | +5% |', 'Coin Move'],
  ['<https://x.com/a/status/1> says', 'https://x.com/a/status/1 says'],
  ['***\n\nafter a rule', 'after a rule'],
];

describe('the link extractor', () => {
  it(`finds ${IN_PLAIN_TEXT.length} addresses of news posts as a reader means them`, () => {
    expect(IN_PLAIN_TEXT.length).toBeGreaterThanOrEqual(40);
  });

  it.each(IN_PLAIN_TEXT)('plain text %j', (text, address) => {
    expect(linksOf(text, false)).toEqual([address]);
    // Markdown finds a bare address the same way.
    expect(linksOf(text, true)).toEqual([address]);
    // The service's tree item points where the renderers do.
    expect(toTreeItem(samplePost({ contentType: 'rawtext', text })).link).toBe(address);
  });

  it.each(IN_MARKDOWN)('markdown %j', (markdown, addresses) => {
    expect(linksOf(markdown, true)).toEqual(addresses);
  });

  it('each address once, in order, at most the limit', () => {
    const text = 'https://a.example/1 https://b.example/2 https://a.example/1 https://c.example/3';
    expect(linksOf(text, false, 2)).toEqual(['https://a.example/1', 'https://b.example/2']);
    expect(linksOf(`![a](https://a.example/1) [b](https://a.example/1) ${text}`, true)).toEqual([
      'https://a.example/1',
      'https://b.example/2',
      'https://c.example/3',
    ]);
  });
});

describe('markdown that cannot be read safely', () => {
  it.each([
    ['nested 2,000 levels deep', `${'>'.repeat(2000)} deep https://a.example/x`],
    ['nested and bracketed', `see https://a.example/x\n\n${'> '.repeat(3000)}${'['.repeat(3000)}x${'*'.repeat(3000)}`],
    ['emphasis that takes marked seconds', `${'*a _'.repeat(16_000)} https://a.example/x`],
  ])('%s: its links and headline are read as plain text', (_name, markdown) => {
    expect(linksOf(markdown, true)).toEqual(['https://a.example/x']);
    expect(headlineOf(markdown, true)).toBe(headlineOf(markdown, false));
  });
});

describe('the headline', () => {
  it.each(HEADLINES)('of %j', (markdown, headline) => {
    expect(headlineOf(markdown, true)).toBe(headline);
  });

  it('of plain text is its first line as sent, markdown marks and all', () => {
    expect(headlineOf('\n**not markdown** [x](https://a.example)\nsecond', false)).toBe(
      '**not markdown** [x](https://a.example)',
    );
  });
});

describe('a removed character ends an address and never joins it to what follows', () => {
  let render: MarkdownRenderer;
  beforeAll(async () => {
    render = await loadMarkdownRenderer({ color: true, width: 200, hyperlinks: true });
  });
  const view = { color: true, hyperlinks: true, utc: true, now: () => 0 };
  const cases = UNSAFE_CHARACTERS.map((char) => [codePoint(char), char] as const);

  it.each(cases)('%s inside an address', (_name, char) => {
    const url = `https://evil.example/${char}click`;
    const expected = ['https://evil.example/'];
    for (const markdown of [false, true]) {
      expect(linksOf(`read ${url} now`, markdown)).toEqual(expected);
      expect(linksOf(`read [here](${url}) now`, markdown).filter((found) => found.includes('click'))).toEqual([]);
    }
    expect(toTreeItem(samplePost({ contentType: 'rawtext', text: url })).link).toBe('https://evil.example/');
    // What a terminal would open: `listen` and `tree`, plain text and markdown, the feed's own link.
    const plain = formatPost(samplePost({ contentType: 'rawtext', text: `read ${url} now` }), 'created', view);
    expect(targets(plain)).toEqual(expected);
    const markdown = formatPost(
      samplePost({ contentType: 'markdown', text: `read ${url} or [here](${url})` }),
      'created',
      {
        ...view,
        markdown: (text: string) => render(text),
      },
    );
    expect(targets(markdown).filter((target) => target.includes('click'))).toEqual([]);
    expect(targets(markdown)).toContain('https://evil.example/');
    const item = formatTreeItem({ _id: '1', title: 'T', body: 'b', time: 0, link: url }, view);
    expect(targets(item)).toEqual(expected);
  });

  it('in text it is a space: the words around it stay apart', () => {
    for (const [, char] of cases) {
      if (char === '\n' || char === '\r' || char === '\t') continue;
      expect(headlineOf(`evil${char}click`, false)).toBe('evil click');
    }
  });
});

describe('images', () => {
  it('render as [image: alt] and their address, which is a link', async () => {
    for (const color of [false, true]) {
      const render = await loadMarkdownRenderer({ color, width: 120, hyperlinks: color });
      const shown = render('CPI: ![CPI chart (YoY)](https://www.bls.gov/charts/cpi_(yoy).png) up');
      expect(shown.replace(/\u001B\[[0-9;]*m|\u001B\]8;;[^\u0007]*\u0007/g, '')).toBe(
        'CPI: [image: CPI chart (YoY)] https://www.bls.gov/charts/cpi_(yoy).png up',
      );
      expect(targets(shown)).toEqual(color ? ['https://www.bls.gov/charts/cpi_(yoy).png'] : []);
    }
  });
});
