import { expect } from 'vitest';
import {
  connect,
  StreamPostsError,
  type ClientState,
  type ConnectOptions,
  type StreamPostsClient,
  type StreamPostsServer,
} from '../../src/index.js';
import { Arrivals } from './arrivals.js';
import { afterTest } from './harness.js';

/** A library client (the one bots use), closed after the test. */
export async function client(options: ConnectOptions): Promise<StreamPostsClient> {
  const connected = await connect(options);
  afterTest(() => connected.close());
  return connected;
}

/** A library client with every state change it reports recorded (to `server.url` unless `options.url`); closed after the test. */
export async function libraryClient(
  server: StreamPostsServer,
  apiKey: string,
  options: Partial<Pick<ConnectOptions, 'heartbeat' | 'url' | 'timeoutMs'>> = {},
): Promise<{ client: StreamPostsClient; states: ClientState[]; until: (check: () => boolean) => Promise<void> }> {
  const states: ClientState[] = [];
  const arrivals = new Arrivals();
  const connected = await client({
    url: server.url,
    ...options,
    apiKey,
    onState: (state) => {
      states.push(state);
      arrivals.notify();
    },
  });
  return {
    client: connected,
    states,
    until: (check) =>
      arrivals.until(check, 60_000, () => new Error(`never happened; states: ${JSON.stringify(states)}`)),
  };
}

/** Alice's library client subscribed to macro-wire, ready: its events as an iterator. */
export async function aliceOnMacroWire(server: StreamPostsServer, options: Pick<ConnectOptions, 'heartbeat'> = {}) {
  const reader = await libraryClient(server, server.keys.readers['alice']!, options);
  const subscription = reader.client.subscribe({ streamIds: ['macro-wire'] });
  const events = subscription[Symbol.asyncIterator]();
  await subscription.ready;
  return { reader, events };
}

/** What `promise` rejected with, which must be a StreamPostsError (a promise that resolves fails the test). */
export async function rejection(promise: Promise<unknown>): Promise<StreamPostsError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StreamPostsError);
  return error as StreamPostsError;
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

/** Ids of the posts of post events. */
export function ids(events: readonly { post: { id: string } }[]): string[] {
  return events.map((event) => event.post.id);
}

/** The reader's heartbeat made short, as a bot's own test would (the default waits 15 s, then 10 s). */
export const HEARTBEAT = { heartbeat: { intervalMs: 300, timeoutMs: 1_000 } };
