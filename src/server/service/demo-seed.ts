import type { Seed } from '../../protocol/seed.js';
import { parseSeed } from './seed.js';

/**
 * The built-in seed: a newsdesk that owns three streams, and two readers with
 * different custom targets on the custom one. Keys are fixed so scripts and
 * docs can name them; they only ever unlock this local, in-memory service.
 * The streams' directory fields (category, followers, pricing, …) differ so that
 * every filter of `GET /v1/streams` has something to tell apart.
 */
export const DEMO_SEED: Seed = parseSeed({
  users: [
    {
      id: 'alice',
      name: 'Alice (trader)',
      readerKey: 'sp_demo_reader_alice',
      follows: ['crypto-legal', 'macro-wire', 'whale-alerts'],
      customTargets: { 'whale-alerts': ['BTC', 'ETH'] },
    },
    {
      id: 'bob',
      name: 'Bob (analyst)',
      readerKey: 'sp_demo_reader_bob',
      follows: ['macro-wire', 'whale-alerts'],
      customTargets: { 'whale-alerts': ['SOL'] },
    },
    { id: 'newsdesk', name: 'Newsdesk (author)', readerKey: 'sp_demo_reader_newsdesk', follows: [] },
  ],
  streams: [
    {
      id: 'crypto-legal',
      name: 'Crypto Legal Updates',
      owner: 'newsdesk',
      key: 'sp_demo_stream_crypto_legal',
      description: 'Court filings, rulings and enforcement actions that move crypto markets.',
      label: 'Legal',
      category: 'LEGAL',
      isFeatured: true,
      followers: 1240,
      pricingType: 'PAID',
      // For its subscribers only: listed to alice (a follower) and newsdesk (the owner), not to bob.
      public: false,
      paidStreamData: { price: 29, currency: 'USD', period: 'month' },
      createdAt: '2025-03-01T09:00:00Z',
    },
    {
      id: 'macro-wire',
      name: 'Macro Wire',
      owner: 'newsdesk',
      key: 'sp_demo_stream_macro_wire',
      description: 'Macro data releases the second they print.',
      label: 'Macro',
      category: 'MACRO',
      followers: 860,
      createdAt: '2025-06-15T09:00:00Z',
    },
    {
      id: 'whale-alerts',
      name: 'Whale Alerts',
      owner: 'newsdesk',
      key: 'sp_demo_stream_whale_alerts',
      custom: true,
      customTargets: ['BTC', 'ETH', 'SOL'],
      description: 'Large on-chain transfers; pick the coins you want.',
      label: 'On-chain',
      category: 'CRYPTO',
      followers: 430,
      packageOnly: true,
      pricingType: 'PACKAGE_ONLY',
      customTargetsData: { BTC: { name: 'Bitcoin' }, ETH: { name: 'Ether' }, SOL: { name: 'Solana' } },
      createdAt: '2025-09-01T09:00:00Z',
    },
  ],
  posts: [
    {
      streamId: 'crypto-legal',
      contentType: 'markdown',
      content: '**SEC v. Binance**: stipulation of dismissal filed. $BNB\n\nhttps://example.org/sec-binance',
    },
    {
      streamId: 'crypto-legal',
      contentType: 'rawtext',
      content: 'Court schedules hearing on the $ETH staking class action for next Tuesday.',
    },
    {
      streamId: 'macro-wire',
      contentType: 'markdown',
      content: '## CPI m/m 0.2% vs 0.3% expected\n- core 0.2%\n- [release](https://example.org/cpi)',
    },
    {
      streamId: 'whale-alerts',
      contentType: 'rawtext',
      customTarget: 'BTC',
      content: '1,200 $BTC moved to an exchange wallet',
    },
    {
      streamId: 'whale-alerts',
      contentType: 'rawtext',
      customTarget: 'SOL',
      content: '250,000 $SOL unstaked by one address',
    },
  ],
});
