import { connect, type ClientState, type StreamPostsClient, type StreamPostsServer } from '../../src/index.js';
import { Arrivals } from '../support/arrivals.js';
import { afterTest } from '../support/harness.js';

/** A library client (the one bots use) with every state change it reports recorded; closed after the test. */
export async function libraryClient(
  server: StreamPostsServer,
  apiKey: string,
): Promise<{ client: StreamPostsClient; states: ClientState[]; until: (check: () => boolean) => Promise<void> }> {
  const states: ClientState[] = [];
  const arrivals = new Arrivals();
  const client = await connect({
    url: server.url,
    apiKey,
    onState: (state) => {
      states.push(state);
      arrivals.notify();
    },
  });
  afterTest(() => client.close());
  return {
    client,
    states,
    until: (check) =>
      arrivals.until(check, 60_000, () => new Error(`never happened; states: ${JSON.stringify(states)}`)),
  };
}

/** The next `count` values of an iterator. */
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
