import { CLOSE_SLOW_CONSUMER } from '../../protocol/close-codes.js';
import type { QueuedPost } from '../ws/fanout.js';
import type { HookedConnection, Outlet } from '../ws/outlet.js';
import { DeliveryGate } from './delivery-gate.js';

/**
 * What injected faults put around one connection's writes (installed as its outlet while a
 * fault applies to it): `go-silent` drops everything, and posts pass through a delivery gate
 * while a `pause-deliveries` or `delay-deliveries` fault holds them (`stop-pongs` needs no
 * wrapper: the registry turns the connection's answering of pings off). The connection's own
 * paths never ask whether a fault is set: they write through whatever outlet they have.
 */
export class FaultOutlet implements Outlet {
  /** go-silent: nothing is written, not even pongs and keep-alives. */
  silent = false;
  gate: DeliveryGate | undefined;

  constructor(readonly connection: HookedConnection) {}

  /** Puts a gate in front of the connection's posts; `onIdle` once it holds nothing and neither pauses nor delays. */
  openGate(maxHeldBytes: number, onIdle: () => void): void {
    this.gate = new DeliveryGate(
      {
        sendFrame: (frame) => this.#passPost(frame),
        sendQueued: (posts) => this.#passPosts(posts),
        overflow: () => this.connection.close(CLOSE_SLOW_CONSUMER, 'slow consumer'),
      },
      maxHeldBytes,
      onIdle,
    );
  }

  writePost(frame: Buffer): void {
    if (this.gate === undefined) this.#passPost(frame);
    else this.gate.deliver(frame);
  }

  writePosts(posts: QueuedPost[]): void {
    if (this.gate === undefined) this.#passPosts(posts);
    else this.gate.deliver(posts);
  }

  writeFrame(frame: Buffer | string): void {
    if (!this.silent) this.connection.writeFrame(frame);
  }

  writeReply(frame: Buffer | string): void {
    if (!this.silent) this.connection.writeReply(frame);
  }

  writePing(): boolean {
    return !this.silent && this.connection.writePing();
  }

  dropHeld(): void {
    this.gate?.stop();
  }

  #passPost(frame: Buffer): void {
    if (!this.silent) this.connection.writePost(frame);
  }

  #passPosts(posts: QueuedPost[]): void {
    if (!this.silent) this.connection.writePosts(posts);
  }
}
