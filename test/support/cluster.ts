import { startServer, type StartServerOptions, type StreamPostsServer } from '../../src/index.js';
import { RoundRobinProxy } from './round-robin.js';

/** What a test sees of a server: its public surface, whichever runs behind it. */
export type ServerHandle = { [K in keyof StreamPostsServer]: StreamPostsServer[K] };

const INSTANCES = 3;

/**
 * Three servers on one Redis keyspace behind one round-robin address: the service a test
 * talks to is the three together. The handle's admin calls act for the service: counts of
 * connections and subscriptions (each instance's own) are summed, and a clock move or a
 * reset resolves once every instance has seen it, as one server's would.
 */
export class TestCluster implements ServerHandle {
  private constructor(
    readonly instances: readonly StreamPostsServer[],
    private readonly proxy: RoundRobinProxy,
    private readonly host: string,
  ) {}

  static async start(options: StartServerOptions): Promise<TestCluster> {
    const instances: StreamPostsServer[] = [];
    try {
      for (let i = 0; i < INSTANCES; i += 1) instances.push(await startServer({ ...options, port: 0 }));
      const proxy = await RoundRobinProxy.start(instances.map((instance) => instance.port));
      return new TestCluster(instances, proxy, new URL(instances[0]!.httpUrl).hostname);
    } catch (error) {
      await Promise.all(instances.map((instance) => instance.close()));
      throw error;
    }
  }

  get #first(): StreamPostsServer {
    return this.instances[0]!;
  }

  #origin(scheme: string): string {
    const hostname = this.host.includes(':') ? `[${this.host}]` : this.host;
    const secure = this.#first.url.startsWith('wss:') ? 's' : '';
    return `${scheme}${secure}://${hostname === '0.0.0.0' ? '127.0.0.1' : hostname}:${this.port}`;
  }

  get url(): string {
    return this.#origin('ws');
  }

  get httpUrl(): string {
    return this.#origin('http');
  }

  get adminUrl(): string | undefined {
    return this.#first.adminUrl === undefined ? undefined : `${this.httpUrl}/_admin`;
  }

  get port(): number {
    return this.proxy.port;
  }

  get keys(): StreamPostsServer['keys'] {
    return this.#first.keys;
  }

  get connectionCount(): number {
    return this.instances.reduce((sum, instance) => sum + instance.connectionCount, 0);
  }

  /** Every instance's connections (ids are each instance's own, so they may repeat across instances). */
  /** Connections are each instance's own: a round on every instance, counted together. */
  async keepAliveRound(): ReturnType<StreamPostsServer['keepAliveRound']> {
    const rounds = await Promise.all(this.instances.map((instance) => instance.keepAliveRound()));
    return {
      pinged: rounds.reduce((sum, round) => sum + round.pinged, 0),
      terminated: rounds.reduce((sum, round) => sum + round.terminated, 0),
    };
  }

  connections(): ReturnType<StreamPostsServer['connections']> {
    return this.instances.flatMap((instance) => instance.connections());
  }

  /** A replay is one instance's: the cluster serves none. */
  replayReport(): ReturnType<StreamPostsServer['replayReport']> {
    return undefined;
  }

  /** Faults are each instance's own (README): these are the first instance's; fault tests run on one instance. */
  get faults(): StreamPostsServer['faults'] {
    return this.#first.faults;
  }

  exportState(): ReturnType<StreamPostsServer['exportState']> {
    return this.#first.exportState();
  }

  /** A scenario plays on the first instance; its posts reach every instance through Redis. */
  play(...args: Parameters<StreamPostsServer['play']>): ReturnType<StreamPostsServer['play']> {
    return this.#first.play(...args);
  }

  step(): ReturnType<StreamPostsServer['step']> {
    return this.#first.step();
  }

  /** Moves the shared clock on one instance; resolves once every instance has released what fell due. */
  async advanceClock(ms: number): Promise<{ now: string; clockOffsetMs: number }> {
    const moved = await this.#first.advanceClock(ms);
    await this.sync();
    return moved;
  }

  async reset(): Promise<void> {
    await this.#first.reset();
    await this.sync();
  }

  async state(): Promise<Awaited<ReturnType<StreamPostsServer['state']>>> {
    await this.sync();
    const states = await Promise.all(this.instances.map((instance) => instance.state()));
    return {
      ...states[0]!,
      connections: states.reduce((sum, state) => sum + state.connections, 0),
      subscriptions: states.reduce((sum, state) => sum + state.subscriptions, 0),
    };
  }

  /**
   * Every instance has followed the store's events up to now: a clock move of 0 is an
   * event of its own, and each instance's call resolves once it dispatched it (and all before).
   */
  async sync(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.advanceClock(0)));
  }

  async close(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.close()));
    await this.proxy.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
