import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { libraryClient, rejection } from '../support/api.js';
import { http, KEYS, startTestServer } from '../support/harness.js';

/** The posts of macro-wire with this text, as a reader lists them. */
async function copiesOf(server: StreamPostsServer, text: string): Promise<string[]> {
  const listed = await http(server, 'GET', '/v1/streams/macro-wire/posts?limit=100', { key: KEYS.alice });
  return (listed.body.posts as { id: string; text: string }[])
    .filter((post) => post.text === text)
    .map((post) => post.id);
}

describe('client.publish when acks are lost', () => {
  it('one lost ack: resent on the same connection with its key, one post, not a duplicate', async () => {
    const server = await startTestServer();
    await server.faults.add({ type: 'drop-acks', count: 1 });
    const { client, states } = await libraryClient(server, server.keys.streams['macro-wire']!, { timeoutMs: 4_000 });
    const result = await client.publish({ streamId: 'macro-wire', content: 'lost once', idempotencyKey: 'lost-1' });
    expect([result.post.text, result.duplicate, result.idempotencyKey]).toEqual(['lost once', false, 'lost-1']);
    expect(server.faults.list()).toEqual([]);
    // The same connection answered the resend: no reconnect was needed.
    expect(states.filter((state) => state.kind === 'reconnecting')).toEqual([]);
    expect(await copiesOf(server, 'lost once')).toEqual([result.post.id]);
  });

  it('three lost acks: resent on the same connection, then on a new one, and there again; one post', async () => {
    const server = await startTestServer();
    await server.faults.add({ type: 'drop-acks', count: 3 });
    const { client, states } = await libraryClient(server, server.keys.streams['macro-wire']!, { timeoutMs: 8_000 });
    const result = await client.publish({ streamId: 'macro-wire', content: 'lost thrice' });
    expect([result.post.text, result.duplicate]).toEqual(['lost thrice', false]);
    expect(server.faults.list()).toEqual([]);
    expect(states).toContainEqual(
      expect.objectContaining({
        kind: 'reconnecting',
        reason: expect.stringContaining('no ack (the reply to add-stream-post)'),
      }),
    );
    expect(await copiesOf(server, 'lost thrice')).toEqual([result.post.id]);
  });

  it('every ack lost: timeout naming the key; publishing again with it after the fault gives the one post', async () => {
    const server = await startTestServer();
    const fault = await server.faults.add({ type: 'drop-acks' });
    const { client } = await libraryClient(server, server.keys.streams['macro-wire']!, { timeoutMs: 2_000 });
    const error = await rejection(client.publish({ streamId: 'macro-wire', content: 'never acked' }));
    expect(error.code).toBe('timeout');
    expect(error.idempotencyKey).toMatch(/^sp-/);
    expect(error.message).toContain(
      `the post may have been published: publish it again with idempotencyKey "${error.idempotencyKey}" to publish it at most once`,
    );
    const [stored] = await copiesOf(server, 'never acked');
    expect(stored).toBeDefined();
    server.faults.clear(fault.id);
    const again = await client.publish({
      streamId: 'macro-wire',
      content: 'never acked',
      idempotencyKey: error.idempotencyKey!,
    });
    expect([again.post.id, again.duplicate]).toEqual([stored, true]);
    expect(await copiesOf(server, 'never acked')).toEqual([stored]);
  });
});
