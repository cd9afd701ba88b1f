import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterTest } from './harness.js';

/**
 * A TCP hop between a client and `serve` that a test can break: `hold()` stops
 * passing the service's bytes on (the service has the commands, the client gets
 * no replies; `holdOpen()` the same for the connections open now), `cut()` resets every connection, `refuse(true)` resets new ones
 * at once (the service looks down).
 */
export class TcpProxy {
  readonly #sockets = new Set<Socket>();
  #holding = false;
  readonly #held = new WeakSet<Socket>();
  #refusing = false;
  connections = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = createServer((downstream) => {
      if (proxy.#refusing) {
        downstream.destroy();
        return;
      }
      proxy.connections += 1;
      const upstream = connect(targetPort, '127.0.0.1');
      for (const socket of [downstream, upstream]) {
        proxy.#sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => {
          proxy.#sockets.delete(socket);
          downstream.destroy();
          upstream.destroy();
        });
      }
      downstream.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        if (!proxy.#holding && !proxy.#held.has(downstream)) downstream.write(chunk);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new TcpProxy(server, address.port);
    return proxy;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  get open(): number {
    return this.#sockets.size / 2;
  }

  hold(): void {
    this.#holding = true;
  }

  /** Like hold(), for the connections open now only: new ones pass the service's bytes on. */
  holdOpen(): void {
    for (const socket of this.#sockets) this.#held.add(socket);
  }

  cut(): void {
    for (const socket of this.#sockets) socket.resetAndDestroy();
    this.#sockets.clear();
    this.#holding = false;
  }

  refuse(refusing: boolean): void {
    this.#refusing = refusing;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A TcpProxy to this port, closed after the test. */
export async function proxyTo(port: number): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(port);
  afterTest(() => proxy.close());
  return proxy;
}
