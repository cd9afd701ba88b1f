import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { deadUrl } from '../support/ports.js';
import { proxyTo } from '../support/proxy.js';
import { connect, publishRest, type ClientState } from '../../src/index.js';
import { client, take } from '../support/api.js';
import { afterTest, startTestServer as server } from '../support/harness.js';

describe('several urls', () => {
  it('a first url that refuses connections is passed over for the second', async () => {
    const srv = await server();
    const dead = await deadUrl();
    const states: ClientState[] = [];
    const reader = await client({
      url: [dead, srv.url],
      apiKey: srv.keys.readers['alice']!,
      onState: (state) => states.push(state),
    });
    expect(reader.userId).toBe('alice');
    const connecting = states.flatMap((state) => (state.kind === 'connecting' ? [state.url] : []));
    expect(connecting).toEqual([`${dead}/v1/ws`, `${srv.url}/v1/ws`]);
  });

  it('a drop moves to the next url: what was published meanwhile arrives once, nothing before it again, and a publish in flight is acknowledged there', async () => {
    const srv = await server();
    const [first, second] = [await proxyTo(srv.port), await proxyTo(srv.port)];
    const states: ClientState[] = [];
    let onConnecting = (_url: string) => {};
    const apiKey = srv.keys.streams['macro-wire']!;
    const owner = await client({
      url: [first.url, second.url],
      apiKey,
      onState: (state) => {
        states.push(state);
        if (state.kind === 'connecting') onConnecting(state.url);
      },
    });
    const direct = await client({ url: srv.url, apiKey });
    const subscription = owner.subscribe({ streamIds: ['macro-wire'] });
    await subscription.ready;
    const events = subscription[Symbol.asyncIterator]();
    const before = [];
    for (let i = 0; i < 3; i += 1)
      before.push((await direct.publish({ streamId: 'macro-wire', content: `before ${i}` })).post.id);
    expect((await take(events, 3)).map((event) => event.post.id)).toEqual(before);

    // The first address stays down: the only way back is the second.
    first.refuse(true);
    const movedOn = new Promise<string>((resolve) => (onConnecting = resolve));
    const watch = direct.subscribe({ streamIds: ['macro-wire'] });
    await watch.ready;
    const watched = watch[Symbol.asyncIterator]();
    // The service's replies on the first address no longer arrive: the publish reaches it, its ack does not.
    first.holdOpen();
    const inFlight = owner.publish({ streamId: 'macro-wire', content: 'in flight', idempotencyKey: 'failover-1' });
    const [stored] = await take(watched, 1);
    expect(stored!.post.text).toBe('in flight');
    const during = (await direct.publish({ streamId: 'macro-wire', content: 'during' })).post.id;
    first.cut();
    expect(await movedOn).toBe(`${second.url}/v1/ws`);
    // Resent there with its key: the post the first address stored, not a second one.
    const { post } = await inFlight;
    expect(post.id).toBe(stored!.post.id);
    const after = (await direct.publish({ streamId: 'macro-wire', content: 'after' })).post.id;
    expect((await take(watched, 2)).map((event) => event.post.id)).toEqual([during, after]);

    const delivered = (await take(events, 3)).map((event) => `${event.type}:${event.post.id}`);
    expect(delivered.sort()).toEqual([`created:${during}`, `created:${post.id}`, `created:${after}`].sort());
    expect(second.connections).toBe(1);
    expect(states.filter((state) => state.kind === 'ready')).toHaveLength(2);
  });

  it('when no url answers, connect rejects with unreachable naming each of them and never the key', async () => {
    const [a, b] = [await deadUrl(), await deadUrl()];
    const apiKey = 'sp_failover_secret_key';
    const error = await connect({ url: [a, b], apiKey, timeoutMs: 2_000 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'unreachable' });
    const message = (error as Error).message;
    expect(message).toContain(`${a}/v1/ws`);
    expect(message).toContain(`${b}/v1/ws`);
    expect(message).not.toContain(apiKey);
  });

  it('refuses a list that mixes tree feed addresses with others, and an empty one', async () => {
    await expect(
      connect({ url: ['ws://a.example', 'ws://b.example/graphql?format=tree'], apiKey: 'k' }),
    ).rejects.toThrow(/every address as a tree feed address/);
    await expect(connect({ url: [], apiKey: 'k' })).rejects.toThrow(TypeError);
  });

  it('publishRest goes on to the next url when one is unreachable, with the same idempotency key', async () => {
    const srv = await server();
    const dead = (await deadUrl()).replace('ws:', 'http:');
    const apiKey = srv.keys.streams['macro-wire']!;
    const first = await publishRest({
      url: [dead, srv.httpUrl],
      apiKey,
      streamId: 'macro-wire',
      content: 'over rest',
      idempotencyKey: 'rest-failover',
    });
    expect(first.duplicate).toBe(false);
    const again = await publishRest({
      url: [dead, srv.httpUrl],
      apiKey,
      streamId: 'macro-wire',
      content: 'over rest',
      idempotencyKey: 'rest-failover',
    });
    // The same post: the key made the second call no new one.
    expect(again.post.id).toBe(first.post.id);
  });

  it('publishRest goes on to the next url when one answers 503 unavailable (its store is down)', async () => {
    const srv = await server();
    let refused = 0;
    const unavailable = createServer((_request, response) => {
      refused += 1;
      response
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'unavailable', message: 'the store is unreachable' } }));
    });
    await new Promise<void>((resolve) => unavailable.listen(0, '127.0.0.1', resolve));
    afterTest(() => new Promise((resolve) => unavailable.close(() => resolve())));
    const { port } = unavailable.address() as { port: number };
    const apiKey = srv.keys.streams['macro-wire']!;
    const result = await publishRest({
      url: [`http://127.0.0.1:${port}`, srv.httpUrl],
      apiKey,
      streamId: 'macro-wire',
      content: 'past a 503',
    });
    expect(refused).toBe(1);
    expect(result.post.text).toBe('past a 503');
  });
});
