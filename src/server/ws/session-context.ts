import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { StreamPostsService } from '../service/service.js';
import type { CommandName } from '../../protocol/types.js';
import type { CommandLimits } from './command-queue.js';
import type { ConnectionContext } from './connection.js';
import type { FanOut, HiddenPosts, Subscriptions } from './fanout.js';
import type { KeyLimits } from './key-limits.js';
import type { SessionHooks } from './outlet.js';
import type { TokenBucket } from './rate-limiter.js';

/**
 * What every session of a server shares: the service, the limits, the hooks. `S` is the
 * session (session.ts names it: `SessionContext`).
 */
export interface SessionContextOf<S> extends ConnectionContext, CommandLimits {
  /** What every connection id of this instance starts with (`w2-` under serve --workers), else ''. */
  connectionIdPrefix: string;
  service: StreamPostsService;
  /** Who is let in, and a subscribe's way to live posts (service/subscriptions.ts). */
  subscriptions: Subscriptions;
  fanout: FanOut;
  logger: Logger;
  /** The service's clock (admin advances included), for `connected.serverTime`. */
  clock: Clock;
  maxBufferedBytes: number;
  /** A fresh limiter per connection, or undefined when rate limiting is off. */
  createRateLimiter: (() => TokenBucket) | undefined;
  /** `connected.rateLimit` as JSON (`,"rateLimit":{…}`), or '' when rate limiting is off. */
  statedRateLimit: string;
  /**
   * A fresh budget of `rate-limited` replies per connection (undefined when no rate limit is
   * on): a flood is not answered frame for frame, and once the budget is spent the
   * connection is closed (PROTOCOL.md B4), so no command goes unanswered on an open one.
   */
  createReplyBudget: (() => TokenBucket) | undefined;
  /** How the hosted dialect (no `hello=1`) delivers hidden posts (PROTOCOL.md B1a). */
  hostedHiddenPosts: HiddenPosts;
  /** Each key's shared rate (the connection cap is the subscription service's business). */
  keyLimits: KeyLimits;
  maxPendingCommands: number;
  /** Injected faults (admin/faults.ts), let in around the session's writes and at its publishes. */
  faults: SessionHooks;
  /** Called once the connection has closed, after the session let go of its subscriptions and key. */
  sessionClosed: (session: S) => void;
}

/** What one session starts with: its number, its key, the address it came by. */
export interface SessionStart {
  /** The connection's number: its id is `c` and this, after the instance's prefix (built when asked for, not held as a string). */
  seq: number;
  key: string | undefined;
  /** The command named in the URL form, with its query arguments. */
  urlCommand?: { event: CommandName; args: Record<string, string> };
  /**
   * The hosted tree feed address: clients there parse every message as a tree item, so
   * no envelope is sent (keep-alive is the ping alone), errors become closes, and frames
   * from the client are ignored but a text `ping`, answered `pong`.
   */
  treeOnly?: boolean;
  /**
   * `hello=1` asked for our dialect: `connected` on the URL form too, hidden posts pushed
   * while hidden. Without it the session speaks as the hosted service does (B1a).
   */
  hello?: boolean;
}
