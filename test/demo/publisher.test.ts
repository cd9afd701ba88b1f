import { describe, expect, it } from 'vitest';
import { DemoPublisher } from '../../src/demo/publisher.js';
import { resolveEndpoint } from '../../src/client/endpoint.js';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { startTestServer } from '../support/harness.js';

describe('DemoPublisher', () => {
  it('a stop() that comes while a post is in flight ends the run without waiting out the interval', async () => {
    const server = await startTestServer();
    const publisher = new DemoPublisher({
      endpoint: resolveEndpoint(server.url),
      seed: DEMO_SEED,
      intervalMs: 3_600_000,
      count: undefined,
    });
    const run = publisher.run();
    // run() is now connecting for its first post: nothing is asleep to wake yet.
    publisher.stop();
    await expect(run).resolves.toMatchObject({ published: 1 });
  });
});
