import type { PublishHooks } from '../fault-hooks.js';
import type { Identity } from '../stores/store.js';
import type { QueuedPost } from './fanout.js';

/**
 * What a connection writes to its peer through. A session is its own outlet; a test hook
 * (admin/faults.ts) installs a wrapper around it to hold, delay or drop what is written, so
 * the session's paths and fan-out never ask whether a fault is set.
 */
export interface Outlet {
  /** A post from fan-out. */
  writePost(frame: Buffer): void;
  /** Posts from fan-out to write in order as the peer reads them (a history, mostly). */
  writePosts(posts: QueuedPost[]): void;
  /** Any other frame: a greeting, an error, a keep-alive, one a test injects. */
  writeFrame(frame: Buffer | string): void;
  /** The answer to one of the peer's commands. */
  writeReply(frame: Buffer | string): void;
  /** A WebSocket ping; false when none was sent. */
  writePing(): boolean;
  /** The connection closed: what is held for it is dropped. */
  dropHeld(): void;
}

/** A connection as a test hook sees it: who it is, and the outlet it writes through. */
export interface HookedConnection extends Outlet {
  readonly id: string;
  readonly identity: Identity | undefined;
  /** The connection itself, or the wrapper installed around it. */
  outlet: Outlet;
  /** Whether the peer's pings (and a tree feed's text `ping`) are answered. */
  answerPings(on: boolean): void;
  close(code: number, reason: string): void;
}

/** The test hooks a session lets in: around its writes, and at its publishes. */
export interface SessionHooks extends PublishHooks {
  /** Called when a session opens and once its key is known: the hook may wrap its outlet. */
  attach(connection: HookedConnection): void;
}
