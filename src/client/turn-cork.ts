import type WebSocket from 'ws';

/** Frames a turn sends in one write at most. */
const FRAMES_PER_WRITE = 16;

interface Corked {
  socket: { cork(): void; uncork(): void };
  /** Frames written to the socket since it was last uncorked. */
  frames: number;
}

/**
 * The frames sent in one turn (a window of publishes) leave in a few writes, not one system
 * call and one TCP segment each; uncorked before any I/O, so nothing waits. A long run goes
 * out every FRAMES_PER_WRITE frames: the service starts on the first posts while the rest
 * are built, instead of the two sides taking turns with whole windows.
 */
export class TurnCork {
  #corked: Corked | undefined;

  send(ws: WebSocket, frame: string): void {
    const corked = this.#corkForThisTurn(ws);
    ws.send(frame);
    if (corked !== undefined && ++corked.frames === FRAMES_PER_WRITE) {
      corked.frames = 0;
      corked.socket.uncork();
      corked.socket.cork();
    }
  }

  #corkForThisTurn(ws: WebSocket): Corked | undefined {
    if (this.#corked !== undefined) return this.#corked;
    const socket = (ws as unknown as { _socket?: Corked['socket'] })._socket;
    if (!socket) return undefined;
    const corked: Corked = { socket, frames: 0 };
    this.#corked = corked;
    socket.cork();
    process.nextTick(() => {
      this.#corked = undefined;
      socket.uncork();
    });
    return corked;
  }
}
