import type { KeepAliveRound } from '../../protocol/admin.js';
import { encodeEvent } from '../../protocol/events.js';
import type { Logger } from '../logger.js';
import type { Awaitable } from '../stores/store.js';

/** Peers pinged per turn of the event loop in a round. */
const KEEP_ALIVE_SLICE = 200;
const KEEP_ALIVE_FRAME = Buffer.from(encodeEvent('keep-alive', {}));

/** A connection as keep-alive rounds see it, whatever its transport. */
export interface KeepAlivePeer {
  /** Cleared by each round's ping, set again by the peer's pong. */
  isAlive: boolean;
  /**
   * The round's ping, and `frame` (the `keep-alive` event) where the transport sends
   * envelopes; clears `isAlive`. False when none was sent (closing, or silenced by a fault).
   */
  ping(frame: Buffer): boolean;
  terminate(): void;
  /** What the log calls it. */
  readonly id: string;
}

export interface KeepAliveOptions {
  intervalMs: number;
  logger: Logger;
  /** Every connection of every transport, at the start of a round. */
  peers: () => Awaitable<Iterable<KeepAlivePeer>>;
  /** Run beside each round's pings (a shared store reads how its engine is set); the round ends with it. */
  onRound?: () => Promise<void>;
}

/**
 * Keep-alive rounds (PROTOCOL.md B2), one timer for every transport: a peer that has not
 * answered the previous round's ping is terminated, every other one gets a ping.
 */
export class KeepAlive {
  readonly #options: KeepAliveOptions;
  #timer: NodeJS.Timeout | undefined;
  /** The round under way, if any. */
  #round: Promise<KeepAliveRound> | undefined;
  #stopped = false;

  constructor(options: KeepAliveOptions) {
    this.#options = options;
  }

  /** Timed rounds every `intervalMs`, counted from the last round (timed or asked for). */
  start(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = setInterval(() => void this.#startRound(), this.#options.intervalMs);
    this.#timer.unref();
  }

  /**
   * One round now (`POST /_admin/keep-alive`); resolves once it has reached every connection.
   * The next timed round comes a whole interval later, so a peer always has an interval to answer.
   */
  round(): Promise<KeepAliveRound> {
    if (this.#stopped) return Promise.resolve({ pinged: 0, terminated: 0 });
    this.start();
    return this.#startRound();
  }

  /** No more rounds; one under way stops at its next slice. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
  }

  /** Rounds run one after the other: one asked for during a timed round waits for it. */
  #startRound(): Promise<KeepAliveRound> {
    const previous = this.#round;
    const round = previous ? previous.then(() => this.#runRound()) : this.#runRound();
    this.#round = round;
    void round.then(() => {
      if (this.#round === round) this.#round = undefined;
    });
    return round;
  }

  /** One round: the pings, and what else a round does beside them. */
  async #runRound(): Promise<KeepAliveRound> {
    const [counts] = await Promise.all([this.#ping(), this.#options.onRound?.()]);
    return counts;
  }

  /**
   * One round, in slices of KEEP_ALIVE_SLICE peers with I/O between them: 10,000 pings in
   * one go held deliveries up for tens of milliseconds.
   */
  async #ping(): Promise<KeepAliveRound> {
    const peers = [...(await this.#options.peers())];
    const { logger } = this.#options;
    const counts: KeepAliveRound = { pinged: 0, terminated: 0 };
    return new Promise((resolve) => {
      const slice = (from: number): void => {
        const to = Math.min(from + KEEP_ALIVE_SLICE, peers.length);
        for (let i = from; i < to; i += 1) {
          const peer = peers[i]!;
          if (!peer.isAlive) {
            logger.log('warn', 'terminating unresponsive peer', { conn: peer.id });
            peer.terminate();
            counts.terminated += 1;
          } else if (peer.ping(KEEP_ALIVE_FRAME)) counts.pinged += 1;
        }
        if (to < peers.length && !this.#stopped) setImmediate(slice, to);
        else resolve(counts);
      };
      slice(0);
    });
  }
}
