import type { Clock } from '../clock.js';
import { TokenBucket } from './rate-limiter.js';
import type { KeyConnections } from '../service/subscriptions.js';
import type { Identity } from '../stores/store.js';

export interface KeyLimitsOptions {
  /** Commands and REST requests per second per key, all its connections together; 0 = off. */
  ratePerSecond: number;
  /** Open connections per key; 0 = no cap. */
  maxConnections: number;
  clock: Pick<Clock, 'now'>;
}

/** Who a key is, as one string: a reader key is its user, a stream key its stream. */
export function keyIdOf(identity: Identity): string {
  const id = identity.kind === 'stream' ? `stream:${identity.streamId ?? ''}` : `reader:${identity.userId}`;
  // One string per key, however many connections hold it (keys come from the seed).
  const known = keyIds.get(id);
  if (known !== undefined) return known;
  keyIds.set(id, id);
  return id;
}

const keyIds = new Map<string, string>();

/**
 * What one key may use across all its connections and REST: a shared rate, a number of
 * connections. Keys come from the seed, so the maps are as bounded as the seed is.
 */
export class KeyLimits implements KeyConnections {
  readonly #options: KeyLimitsOptions;
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #connections = new Map<string, number>();

  constructor(options: KeyLimitsOptions) {
    this.#options = options;
  }

  keyIdOf(identity: Identity): string {
    return keyIdOf(identity);
  }

  get maxConnections(): number {
    return this.#options.maxConnections;
  }

  /** The key's shared bucket, or undefined when the per-key rate limit is off. */
  bucket(keyId: string): TokenBucket | undefined {
    const rate = this.#options.ratePerSecond;
    if (rate === 0) return undefined;
    let bucket = this.#buckets.get(keyId);
    if (!bucket) {
      bucket = new TokenBucket(rate, rate * 2, this.#options.clock);
      this.#buckets.set(keyId, bucket);
    }
    return bucket;
  }

  /** Counts a connection in; false (and nothing counted) when the key already has its maximum. */
  openConnection(keyId: string): boolean {
    const open = this.#connections.get(keyId) ?? 0;
    const max = this.#options.maxConnections;
    if (max !== 0 && open >= max) return false;
    this.#connections.set(keyId, open + 1);
    return true;
  }

  closeConnection(keyId: string): void {
    const open = (this.#connections.get(keyId) ?? 0) - 1;
    if (open > 0) this.#connections.set(keyId, open);
    else this.#connections.delete(keyId);
  }
}
