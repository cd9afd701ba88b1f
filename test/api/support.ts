import { afterEach } from 'vitest';
import {
  connect,
  startServer,
  type ConnectOptions,
  type StartServerOptions,
  type StreamPostsClient,
  type StreamPostsServer,
} from '../../src/index.js';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A library server on port 0, closed after the test. */
export async function server(options: StartServerOptions = {}): Promise<StreamPostsServer> {
  const started = await startServer({ port: 0, rateLimit: 0, ...options });
  cleanups.push(() => started.close());
  return started;
}

/** A library client, closed after the test. */
export async function client(options: ConnectOptions): Promise<StreamPostsClient> {
  const connected = await connect(options);
  cleanups.push(() => connected.close());
  return connected;
}

export function onCleanup(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/** The next `count` values of an iterator (waits for them; never ends the iteration). */
export async function take<T>(iterator: AsyncIterator<T>, count: number): Promise<T[]> {
  const values: T[] = [];
  while (values.length < count) {
    const result = await iterator.next();
    if (result.done) throw new Error(`the iteration ended after ${values.length} of ${count} values`);
    values.push(result.value);
  }
  return values;
}
