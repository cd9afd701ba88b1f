import type { Identity } from './stores/store.js';

/** A `drop-acks` fault that matched a publish: its acknowledgement is lost if the publish succeeds (`dropsAck`). */
export interface AckFault {
  readonly fault: unknown;
}

/**
 * Where a publish lets injected faults in (admin/faults.ts implements it), over WebSocket
 * or REST: the transports define the hook, the admin room fills it.
 */
export interface PublishHooks {
  /**
   * Called before a publish runs: throws the error a `fail-publishes` fault injects, or
   * returns the `drop-acks` fault that matches, for `dropsAck` once the post is stored.
   */
  onPublish(identity: Identity, streamId: string, connection?: string): AckFault | undefined;
  /** Whether a stored post's acknowledgement is lost. */
  dropsAck(matched: AckFault): boolean;
}
