import WebSocket from 'ws';
import { Arrivals } from './arrivals.js';

/**
 * Behaves as the Tree family of news terminals does on the feed: sends `login KEY` once
 * open, a text `ping` every `pingEveryMs`, and drops the connection for a new one when no
 * `pong` text came within 2 s of a ping. It counts the connections it had to open.
 */
export class PingingTerminal {
  static readonly PONG_WITHIN_MS = 2000;
  connections = 0;
  pongs = 0;
  readonly itemIds: string[] = [];
  #ws: WebSocket | undefined;
  #pinger: NodeJS.Timeout | undefined;
  #deadline: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #arrivals = new Arrivals();

  constructor(
    readonly url: string,
    readonly key: string,
    readonly pingEveryMs: number,
  ) {
    this.#open();
  }

  #open(): void {
    this.connections += 1;
    const ws = new WebSocket(this.url);
    this.#ws = ws;
    ws.on('error', () => {});
    ws.on('open', () => {
      ws.send(`login ${this.key}`);
      this.#pinger = setInterval(() => this.#ping(ws), this.pingEveryMs);
    });
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (text === 'pong') {
        this.pongs += 1;
        clearTimeout(this.#deadline);
        this.#deadline = undefined;
      } else this.itemIds.push(JSON.parse(text)._id);
      this.#arrivals.notify();
    });
    ws.on('close', () => this.#arrivals.notify());
  }

  #ping(ws: WebSocket): void {
    ws.send('ping');
    this.#deadline ??= setTimeout(() => this.#reconnect(), PingingTerminal.PONG_WITHIN_MS);
  }

  #reconnect(): void {
    this.#deadline = undefined;
    clearInterval(this.#pinger);
    this.#ws?.terminate();
    if (!this.#stopped) this.#open();
    this.#arrivals.notify();
  }

  /** Waits for `ready`, and gives up at once if the terminal had to open more than `connections`. */
  async until(ready: () => boolean, what: string, connections = 1): Promise<void> {
    await this.#arrivals.until(
      () => {
        if (this.connections > connections) {
          throw new Error(`the terminal reconnected (no pong within 2 s) waiting for ${what}`);
        }
        return ready();
      },
      10_000,
      () => new Error(`terminal never saw ${what}`),
    );
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#pinger);
    clearTimeout(this.#deadline);
    this.#ws?.close();
  }
}
