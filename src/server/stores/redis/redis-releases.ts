import { ProtocolError } from '../../../protocol/errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import type { EventFeed } from './redis-feed.js';
import type { RedisLink } from './redis-link.js';
import { SCRIPTS } from './redis-scripts.js';
import { ReleaseClaims } from './release-claims.js';

const RELEASE_BATCH = 200;
/** A claim that failed (the store unreachable) is tried again this much later, not at once. */
const RELEASE_RETRY_MS = 1_000;

export interface RedisReleasesOptions {
  clock: Clock;
  link: RedisLink;
  feed: EventFeed;
  logger: Logger;
  /** The keyspace lost its data: load the seed again and follow from there. */
  follow: () => Promise<void>;
}

/**
 * The Redis store's releases on this instance: when it claims (ReleaseClaims), and the claim
 * itself, run until none is due (another instance may claim some: each fires once).
 */
export class RedisReleases {
  readonly claims: ReleaseClaims;
  readonly #options: RedisReleasesOptions;
  #releasing: Promise<void> | undefined;
  #again = false;

  constructor(options: RedisReleasesOptions) {
    this.#options = options;
    this.claims = new ReleaseClaims(options.clock, () => void this.run());
  }

  /** Claims due releases until none is left; resolves once this instance dispatched them. */
  run(): Promise<void> {
    if (this.#releasing) {
      this.#again = true;
      return this.#releasing;
    }
    const { clock, link, feed, logger, follow } = this.#options;
    this.claims.claimStarted();
    this.#releasing = (async () => {
      let seq = 0;
      try {
        do {
          this.#again = false;
          let claimed: number;
          do {
            const [count, lastSeq, nextAt, nextId] = await link.eval(SCRIPTS.releaseDue, [clock.now(), RELEASE_BATCH]);
            if (count === 'lost') {
              // Nothing left to release: the seed is loaded again, and what follows starts over.
              void follow().catch(() => {});
              break;
            }
            claimed = count as number;
            seq = lastSeq as number;
            // The earliest pending release as of event `seq`; events this instance dispatched
            // past it (a post hidden since, published elsewhere) already say more.
            if (feed.lastSeq === undefined || feed.lastSeq <= seq)
              this.claims.next(nextAt === '' ? null : [Number(nextAt), nextId as string]);
          } while (claimed === RELEASE_BATCH);
        } while (this.#again);
      } catch (error) {
        // Retried when the client is ready again, and every RELEASE_RETRY_MS meanwhile. A store
        // that cannot be used has said why once (StoreHealth): not again every retry.
        const known = error instanceof ProtocolError && error.code === 'unavailable';
        logger.log(known ? 'debug' : 'warn', 'releases not run', { reason: (error as Error).message });
        this.#releasing = undefined;
        this.claims.claimEnded(RELEASE_RETRY_MS);
        return;
      }
      this.#releasing = undefined;
      this.claims.claimEnded();
      await feed.awaitSeq(seq).catch(() => {});
    })();
    return this.#releasing;
  }
}
