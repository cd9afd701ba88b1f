import { ProtocolError } from '../../../protocol/errors.js';
import type { Logger } from '../../logger.js';
import type { StoreTrouble } from '../store.js';

/** Each cause in words; `policy` is Redis's `maxmemory-policy` as last read, when known. */
const MESSAGES: Readonly<Record<StoreTrouble, (policy: string | undefined) => string>> = {
  unreachable: () => 'the service cannot reach its store (Redis); nothing was stored, retry later',
  'out-of-memory': (policy) =>
    `the service's store (Redis) is out of memory (maxmemory reached${policy === undefined ? '' : ` under maxmemory-policy ${policy}`}); nothing was stored, retry later`,
  'script-missing': () => "the service's store (Redis) lost its scripts (SCRIPT FLUSH); nothing was stored, retry",
  reloading: () => "the service's store (Redis) lost its data and is loading the seed again; nothing was stored, retry",
  evicting: (policy) =>
    `the service's store (Redis) may evict keys (maxmemory-policy ${policy ?? 'not noeviction'}) and lose posts; nothing was stored, retry once it is noeviction again`,
};

/** The `unavailable` refusal that names `trouble`. */
export function troubleError(trouble: StoreTrouble, command?: string, policy?: string): ProtocolError {
  return new ProtocolError('unavailable', MESSAGES[trouble](policy), command);
}

/** What a failed Redis command says of the store: Redis's own error prefixes, else the link. */
function troubleOf(error: unknown): StoreTrouble {
  const message = error instanceof Error ? error.message : '';
  if (message.startsWith('OOM ')) return 'out-of-memory';
  if (message.startsWith('NOSCRIPT')) return 'script-missing';
  return 'unreachable';
}

/** How often a store in trouble is asked whether it can be used again. */
const PROBE_MS = 1_000;

/**
 * Whether the store can be used, from what its commands met: one warning per cause as the
 * store goes into trouble (not one per refused publish), one line when it is usable again.
 * While in trouble, `probe` runs every PROBE_MS: a store refusing writes (full, or reloading)
 * gets no publish to find out it takes them again when the load balancer, told by
 * `/readyz`, sends it none. Eviction is apart: it lets writes through, so only the policy
 * read again says it is over (`evictionOver`), whatever else comes and goes meanwhile.
 */
export class StoreHealth {
  /** What a command met; over once a command goes through. */
  #trouble: Exclude<StoreTrouble, 'evicting'> | undefined;
  #evicting = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Redis's `maxmemory-policy` as last read, for the refusals' words. */
  policy: string | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly probe: () => void,
  ) {}

  /** The most pressing trouble: what commands meet, else eviction. */
  get trouble(): StoreTrouble | undefined {
    return this.#trouble ?? (this.#evicting ? 'evicting' : undefined);
  }

  /** Whether Redis's policy evicts keys (not accepted at start). */
  get evicting(): boolean {
    return this.#evicting;
  }

  /** A command failed: the refusal to answer with; the cause is logged if it is new. */
  failed(error: unknown, command?: string): ProtocolError {
    const trouble = troubleOf(error);
    this.enter(trouble, error instanceof Error ? error.message : String(error));
    return this.refusal(trouble, command);
  }

  /** The `unavailable` refusal that names `trouble` (and the policy, when it matters). */
  refusal(trouble: StoreTrouble, command?: string): ProtocolError {
    return troubleError(trouble, command, this.policy);
  }

  enter(trouble: StoreTrouble, reason: string): void {
    if (this.#closed || this.trouble === trouble || (trouble === 'evicting' && this.#evicting)) return;
    if (trouble === 'evicting') this.#evicting = true;
    else this.#trouble = trouble;
    this.logger.log('warn', 'store unusable', { cause: trouble, reason });
    this.#timer ??= setInterval(this.probe, PROBE_MS).unref();
  }

  /** A write went through: what commands met is over (eviction is not: it lets writes through). */
  usable(): void {
    if (this.#trouble === undefined) return;
    this.logger.log('info', 'store usable again', { was: this.#trouble });
    this.#trouble = undefined;
    this.#stopProbing();
  }

  /** The policy is `noeviction` again. */
  evictionOver(): void {
    if (!this.#evicting) return;
    this.logger.log('info', 'store usable again', { was: 'evicting' });
    this.#evicting = false;
    this.#stopProbing();
  }

  #stopProbing(): void {
    if (this.trouble !== undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** A read went through: the store is reachable (a full or reloading one still refuses writes). */
  reachable(): void {
    if (this.#trouble === 'unreachable' || this.#trouble === 'script-missing') this.usable();
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
  }
}
