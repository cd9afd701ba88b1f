import { cashtags } from '../protocol/tree.js';
import { webAddresses } from '../protocol/urls.js';
import { safeLine } from '../render/text.js';

/**
 * Symbols a `#HASHTAG` is taken as a coin for: about the hundred largest by market value.
 * A profile adds its own (`terminal.coins`); a `$CASHTAG` is a coin whatever its symbol.
 */
// prettier-ignore
export const KNOWN_COINS: readonly string[] = [
  'BTC', 'ETH', 'USDT', 'XRP', 'BNB', 'SOL', 'USDC', 'DOGE', 'TRX', 'ADA',
  'LINK', 'AVAX', 'SUI', 'XLM', 'TON', 'SHIB', 'HBAR', 'BCH', 'DOT', 'LTC',
  'HYPE', 'DAI', 'LEO', 'XMR', 'PEPE', 'UNI', 'NEAR', 'APT', 'AAVE', 'ICP',
  'ETC', 'TAO', 'ONDO', 'MNT', 'POL', 'CRO', 'KAS', 'VET', 'TRUMP', 'RENDER',
  'FET', 'ARB', 'ENA', 'FIL', 'ATOM', 'ALGO', 'OKB', 'WLD', 'BONK', 'JUP',
  'OP', 'TIA', 'INJ', 'STX', 'SEI', 'IMX', 'GRT', 'QNT', 'FLR', 'XDC',
  'WIF', 'LDO', 'CRV', 'THETA', 'SAND', 'MKR', 'FLOKI', 'GALA', 'JASMY', 'EOS',
  'IOTA', 'XTZ', 'BSV', 'KAIA', 'PYTH', 'RAY', 'FLOW', 'MANA', 'NEO', 'BTT',
  'AXS', 'CAKE', 'PENDLE', 'STRK', 'EGLD', 'CHZ', 'RUNE', 'APE', 'COMP', 'DYDX',
  'SNX', 'ZEC', 'KSM', 'MINA', 'ENS', '1INCH', 'SUSHI', 'ZRO', 'PENGU', 'FARTCOIN',
];

const COIN_SYMBOL = /^[A-Za-z0-9][A-Za-z0-9]{0,9}$/;

/** Whether `text` can be a coin's symbol: up to ten letters or digits. */
export function isCoinSymbol(text: string): boolean {
  return COIN_SYMBOL.test(text);
}

// `#ETH` after a space or a bracket, not `a#b` nor an address's fragment; `#1` is no symbol.
const HASHTAG = /(?<![\w#&/])#([A-Za-z0-9]{1,10})(?![A-Za-z0-9])/g;
/** Posts are read this far for coins: a 64 KiB post is read no further than a row needs. */
const COIN_READ_CHARS = 64 * 1024;
/** Tags a post keeps: a row shows three. */
const MAX_COINS = 8;

/** Text with every web address blanked: what a `#` inside a link says is no coin. */
function withoutLinks(text: string): string {
  let out = '';
  let copied = 0;
  for (const { start, end } of webAddresses(text)) {
    out += `${text.slice(copied, start)}${' '.repeat(end - start)}`;
    copied = end;
  }
  return out + text.slice(copied);
}

/**
 * A post's coins, the first the one `t` filters on: its custom target's value (what the
 * publisher said the post is about), then its `$CASHTAG`s and its `#HASHTAG`s of known
 * coins in the order the text names them, each once, upper case.
 */
export function coinsOf(text: string, customTarget: string | null, known: ReadonlySet<string>): string[] {
  const coins = new Set<string>();
  const target = customTarget === null ? '' : safeLine(customTarget);
  if (target !== '') coins.add(isCoinSymbol(target) ? target.toUpperCase() : [...target].slice(0, 24).join(''));
  const read = withoutLinks(text.slice(0, COIN_READ_CHARS));
  const found: [at: number, coin: string][] = [];
  for (const tag of cashtags(read)) found.push([read.indexOf(tag.found[0]!), tag.coin]);
  for (const match of read.matchAll(HASHTAG)) {
    const coin = match[1]!.toUpperCase();
    if (known.has(coin)) found.push([match.index, coin]);
  }
  found.sort((a, b) => a[0] - b[0]);
  for (const [, coin] of found) if (coins.size < MAX_COINS) coins.add(coin);
  return [...coins];
}

/** The known symbols: the package's list and the profile's, upper case. */
export function knownCoins(extra: readonly string[] = []): ReadonlySet<string> {
  return new Set([...KNOWN_COINS, ...extra.map((coin) => coin.toUpperCase())]);
}
