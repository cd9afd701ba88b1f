import type WebSocket from 'ws';
import { Arrivals } from './arrivals.js';

export interface Message {
  event?: string;
  data?: any;
  requestId?: string;
  [field: string]: unknown;
}

/** A WebSocket client that records every message, for asserting on what the server sent. */
export class TestClient {
  readonly messages: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #arrivals = new Arrivals();
  #cursor = 0;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()) as Message);
      this.#arrivals.notify();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.#arrivals.notify();
      });
    });
    ws.on('error', () => {});
  }

  send(command: unknown): void {
    this.ws.send(typeof command === 'string' ? command : JSON.stringify(command));
  }

  /** Waits for the first message after the cursor matching `match`, moves the cursor past it. */
  // The bound only names what never came; it is far above any wait in a passing run, so a
  // loaded machine (CI's two cores running two test files at once) does not fail a test.
  async next(match: (message: Message) => boolean = () => true, timeoutMs = 10_000): Promise<Message> {
    let found: Message | undefined;
    const ready = () => {
      for (let i = this.#cursor; i < this.messages.length; i += 1) {
        if (match(this.messages[i]!)) {
          found = this.messages[i]!;
          this.#cursor = i + 1;
          return true;
        }
      }
      return false;
    };
    await this.#arrivals.until(
      ready,
      timeoutMs,
      () =>
        new Error(
          `no matching message within ${timeoutMs} ms; got ${JSON.stringify(this.messages.slice(this.#cursor))}`,
        ),
    );
    return found!;
  }

  /** Waits for the next message with this event name. */
  nextEvent(event: string, timeoutMs?: number): Promise<Message> {
    return this.next((message) => message.event === event, timeoutMs);
  }

  /** Sends a command with a fresh requestId and waits for the reply carrying it. */
  async request(event: string, data: unknown, timeoutMs?: number): Promise<Message> {
    const requestId = `r${Math.random().toString(36).slice(2)}`;
    this.send({ event, data, requestId });
    return this.next((message) => message.requestId === requestId && message.event !== undefined, timeoutMs);
  }

  /** Messages received after the cursor so far (does not wait). */
  rest(): Message[] {
    return this.messages.slice(this.#cursor);
  }

  close(): void {
    this.ws.close();
  }
}

/**
 * Resolves once the server has read everything this peer sent before (its answers to pings
 * included): the server answers a ping of the peer's own only after what came before it.
 */
export function readByServer(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    const onPong = (): void => {
      ws.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      ws.off('pong', onPong);
      reject(new Error('closed before the server answered a ping'));
    };
    ws.once('pong', onPong);
    ws.once('close', onClose);
    ws.ping();
  });
}
