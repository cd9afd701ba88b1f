import type { Post } from '../../src/protocol/types.js';

/** The Post example of PROTOCOL.md B3, with any fields changed. */
export function samplePost(change: Partial<Post> = {}): Post {
  return {
    id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
    streamId: '01J366WJBXF6BN036SXVNRAP8A',
    streamName: 'Crypto Legal Updates',
    text: 'SEC v. Binance: stipulation of dismissal filed',
    contentType: 'markdown',
    createdAt: '2026-11-21T12:00:00.000Z',
    releaseAt: null,
    hidden: false,
    customTarget: null,
    ...change,
  };
}

/** A post of the stream `wire` (a service of the test's own), with any fields changed, hostile ones too. */
export function wirePost(change: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...samplePost({ streamId: 'wire', streamName: 'Wire', text: 'hello', contentType: 'rawtext' }), ...change };
}

/** `releaseAt` this far ahead, as ISO 8601. */
export function inMs(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

const CATEGORIES = ['CRYPTO', 'MACRO', 'LEGAL'] as const;
const PRICING = ['FREE', 'PAID', 'PACKAGE_ONLY'] as const;

/**
 * A directory of 23 streams owned by `desk`, for the filters and pages of `GET /v1/streams`:
 * stream `sNN` (01-23) has `NN * 10` followers, category and pricing by NN mod 3, is featured
 * when NN mod 5 is 0, custom when NN mod 4 is 0, a draft when NN mod 7 is 0, not public when
 * NN mod 6 is 0, and created NN days after 2025-01-01 (s23 has no date). `ann` follows s06
 * and s12 (both not public) and s04 (custom, target A selected); `cid` follows nothing.
 */
export function directorySeed() {
  const streams = Array.from({ length: 23 }, (_, index) => {
    const n = index + 1;
    const id = `s${String(n).padStart(2, '0')}`;
    return {
      id,
      name: `Stream ${n}`,
      owner: 'desk',
      key: `sp_test_stream_${id}`,
      followers: n * 10,
      category: CATEGORIES[n % 3]!,
      pricingType: PRICING[n % 3]!,
      isFeatured: n % 5 === 0,
      ...(n % 4 === 0 ? { custom: true, customTargets: ['A', 'B', 'C'] } : {}),
      state: n % 7 === 0 ? ('DRAFT' as const) : ('ACTIVE' as const),
      public: n % 6 !== 0,
      ...(n === 23 ? {} : { createdAt: new Date(Date.UTC(2025, 0, 1 + n)).toISOString() }),
    };
  });
  return {
    users: [
      { id: 'desk', name: 'Desk', readerKey: 'sp_test_reader_desk' },
      {
        id: 'ann',
        name: 'Ann',
        readerKey: 'sp_test_reader_ann',
        follows: ['s04', 's06', 's12'],
        customTargets: { s04: ['A'] },
      },
      { id: 'cid', name: 'Cid', readerKey: 'sp_test_reader_cid' },
    ],
    streams,
  };
}

/** The demo seed's streams in their REST form, as the owner's reader key (newsdesk) sees them. */
export const DEMO_REST_STREAMS = {
  legal: {
    id: 'crypto-legal',
    name: 'Crypto Legal Updates',
    description: 'Court filings, rulings and enforcement actions that move crypto markets.',
    custom: false,
    customTargets: [],
    customTargetsData: {},
    label: 'Legal',
    paidStreamData: { price: 29, currency: 'USD', period: 'month' },
    packageOnly: false,
    isFeatured: true,
    owner: 'newsdesk',
    followers: 1240,
    following: true,
    publish: false,
  },
  macro: {
    id: 'macro-wire',
    name: 'Macro Wire',
    description: 'Macro data releases the second they print.',
    custom: false,
    customTargets: [],
    customTargetsData: {},
    label: 'Macro',
    paidStreamData: {},
    packageOnly: false,
    isFeatured: false,
    owner: 'newsdesk',
    followers: 860,
    following: true,
    publish: false,
  },
  whale: {
    id: 'whale-alerts',
    name: 'Whale Alerts',
    description: 'Large on-chain transfers; pick the coins you want.',
    custom: true,
    customTargets: ['BTC', 'ETH', 'SOL'],
    customTargetsData: { BTC: { name: 'Bitcoin' }, ETH: { name: 'Ether' }, SOL: { name: 'Solana' } },
    label: 'On-chain',
    paidStreamData: {},
    packageOnly: true,
    isFeatured: false,
    owner: 'newsdesk',
    followers: 430,
    following: true,
    publish: false,
  },
};
