import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import { MAX_LOOKUPS, StreamNames } from '../../src/client/stream-names.js';
import { until } from '../support/poll.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/**
 * A REST service whose `GET /v1/streams/{id}` answers only when the test says: it counts the
 * requests it holds at once, and the most it ever held.
 */
async function heldStreams() {
  const held: { id: string; response: ServerResponse }[] = [];
  let most = 0;
  const server = createServer((request, response) => {
    const id = decodeURIComponent(request.url!.split('/')[3] ?? '');
    held.push({ id, response });
    most = Math.max(most, held.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: resolveEndpoint(`ws://127.0.0.1:${port}`),
    held,
    most: () => most,
    /** Answers the oldest request held. */
    answer(): string {
      const { id, response } = held.shift()!;
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id, name: `name of ${id}` }));
      return id;
    },
  };
}

describe('stream names', () => {
  it(`are looked up at most ${MAX_LOOKUPS} at a time, and a post's stream goes first`, async () => {
    const service = await heldStreams();
    const names = new StreamNames([service.endpoint], 'key', 30_000);
    const ids = Array.from({ length: 200 }, (_, index) => `stream-${index}`);
    const looked = Promise.all(ids.map((id) => names.of(id)));
    await until(() => service.held.length === MAX_LOOKUPS, `${MAX_LOOKUPS} lookups in flight`);
    // A post of the last stream waits for its name: its lookup is the next to start.
    const named = names.named({
      id: 'p',
      streamId: 'stream-199',
      streamName: 'stream-199',
      text: 't',
      contentType: 'rawtext',
      createdAt: new Date(0).toISOString(),
      releaseAt: null,
      hidden: false,
      customTarget: null,
    });
    service.answer();
    await until(() => service.held.length === MAX_LOOKUPS, 'the next lookup');
    expect(service.held.at(-1)!.id).toBe('stream-199');
    for (let answered = 1; answered < ids.length; answered++) {
      await until(() => service.held.length > 0, 'a lookup in flight');
      service.answer();
    }
    expect(await looked).toEqual(ids.map((id) => `name of ${id}`));
    expect((await named).streamName).toBe('name of stream-199');
    expect(service.most()).toBe(MAX_LOOKUPS);
  });
});
