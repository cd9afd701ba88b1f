import type { Logger } from '../../logger.js';
import { infoField } from './redis-config.js';
import type { StoreHealth } from './store-health.js';

export interface EvictionWatchOptions {
  /** Redis's `INFO memory stats` (INFO, not CONFIG GET, which managed services often disable). */
  info: () => Promise<string>;
  health: StoreHealth;
  logger: Logger;
  /** Started on an evicting policy with the risk accepted: only keys actually evicted count. */
  allowEviction: boolean;
  /** Keys were evicted, or may be from now on: this instance's subscribers must replay (1012). */
  onLoss: (reason: string) => void;
}

/**
 * Eviction that starts while the service runs (PROTOCOL.md B8), read from `INFO` once a
 * keep-alive round: a `maxmemory-policy` set to one that evicts makes the store unusable
 * (`evicting`) until it is `noeviction` again, and `evicted_keys` growing is a loss. Either is
 * announced to subscribers with the 1012, so no post acknowledged before it is lost in silence.
 */
export class EvictionWatch {
  readonly #options: EvictionWatchOptions;
  /** `evicted_keys` as last read; undefined until read (or when Redis hides it). */
  #evicted: number | undefined;
  #checking: Promise<void> | undefined;

  constructor(options: EvictionWatchOptions) {
    this.#options = options;
  }

  /** One reading of `INFO`; one at a time (callers meanwhile share it). */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    const { health, logger, allowEviction, onLoss } = this.#options;
    // Redis away or INFO renamed away: what the other commands meet says the rest.
    const info = await this.#options.info().catch(() => undefined);
    if (info === undefined) return;
    const policy = infoField(info, 'maxmemory_policy');
    const evictedText = infoField(info, 'evicted_keys');
    const evicted = evictedText === undefined ? undefined : Number(evictedText);
    const before = this.#evicted;
    this.#evicted = evicted;
    health.policy = policy;
    // A count lower than before is a restarted Redis or CONFIG RESETSTAT: counted from there.
    const newlyEvicted = before !== undefined && evicted !== undefined && evicted > before ? evicted - before : 0;
    const evicts = !allowEviction && policy !== undefined && policy !== 'noeviction';
    if (evicts && !health.evicting) {
      health.enter(
        'evicting',
        `maxmemory-policy is ${policy}; ${evicted ?? 'an unknown number of'} keys evicted since Redis started`,
      );
      onLoss(`Redis's maxmemory-policy is ${policy}: it may evict keys`);
      return;
    }
    if (!evicts) health.evictionOver();
    if (newlyEvicted > 0) {
      logger.log('warn', 'Redis evicted keys: posts may be lost; subscribers must replay', {
        evictedKeys: newlyEvicted,
        maxmemoryPolicy: policy,
      });
      onLoss(`Redis evicted ${newlyEvicted} keys`);
    }
  }
}
