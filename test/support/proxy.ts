import { createServer, connect as tcpConnect, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach } from 'vitest';

/** A TCP relay in front of a server whose connections a test can cut, to simulate network drops. */
export class CuttableProxy {
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  cuts = 0;
  connections = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<number> {
    this.#server = createServer((client) => {
      this.connections += 1;
      const upstream = tcpConnect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    proxies.add(this);
    return (this.#server!.address() as AddressInfo).port;
  }

  /** Drops every relayed connection at once, as a network failure would (no close frames). */
  cut(): void {
    this.cuts += 1;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}

const proxies = new Set<CuttableProxy>();
afterEach(async () => {
  await Promise.all([...proxies].map((proxy) => proxy.close()));
  proxies.clear();
});
