import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * One address in front of several `serve` instances, as a TCP load balancer: each new
 * connection goes to the next instance in turn, so one client's WebSocket connections,
 * REST requests and admin calls land on different instances.
 */
export class RoundRobinProxy {
  readonly #sockets = new Set<Socket>();
  #next = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPorts: readonly number[]): Promise<RoundRobinProxy> {
    let proxy!: RoundRobinProxy;
    // Half-open on both sides: a client's FIN reaches the instance, which may still answer (HTTP/1.0).
    const server = createServer({ allowHalfOpen: true }, (downstream) => {
      const target = targetPorts[proxy.#next++ % targetPorts.length]!;
      const upstream = connect({ port: target, host: '127.0.0.1', allowHalfOpen: true });
      for (const socket of [downstream, upstream]) {
        proxy.#sockets.add(socket);
        socket.on('close', () => proxy.#sockets.delete(socket));
      }
      downstream.pipe(upstream);
      upstream.pipe(downstream);
      // A client's reset resets the instance's end; an instance's reset ends the client's after
      // what it sent (a 413 before the reset of an unread body still reaches the client).
      downstream.on('error', () => upstream.resetAndDestroy());
      upstream.on('error', () => downstream.end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new RoundRobinProxy(server, address.port);
    return proxy;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
