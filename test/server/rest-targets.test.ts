import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { adminState, connectAs, http, KEYS, startTestServer, type TestClient } from '../support/harness.js';

function select(server: StreamPostsServer, key: string, streamId: string, body: unknown) {
  return http(server, 'POST', `/v1/streams/${streamId}/custom-targets`, { key, body });
}

function whale(server: StreamPostsServer, customTarget: string) {
  return http(server, 'POST', '/v1/streams/whale-alerts/post', {
    key: KEYS.whaleAlerts,
    body: { content: `${customTarget} moved`, contentType: 'rawtext', customTarget },
  });
}

async function selected(server: StreamPostsServer, key: string): Promise<string[]> {
  return (await http(server, 'GET', '/v1/streams/whale-alerts', { key })).body.selectedTargets;
}

/** The target of the next post delivered to `client`. */
async function nextTarget(client: TestClient): Promise<string> {
  return (await client.nextEvent('stream.post.created')).data.customTarget;
}

describe('POST /v1/streams/{id}/custom-targets', () => {
  it('changes what a live subscription receives at once', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    expect((await alice.request('on-stream-post', { streamIds: 'whale-alerts' })).event).toBe('sub_ack');

    const reply = await select(server, KEYS.alice, 'whale-alerts', { customTargets: ['SOL'] });
    expect(reply).toMatchObject({ status: 200, body: { customTargets: ['SOL'] } });
    // BTC, which alice selected in the seed, is no longer hers: the SOL post is the first she gets.
    expect((await whale(server, 'BTC')).status).toBe(201);
    expect((await whale(server, 'SOL')).status).toBe(201);
    expect(await nextTarget(alice)).toBe('SOL');

    expect((await select(server, KEYS.alice, 'whale-alerts', { customTargets: ['ETH', 'BTC'] })).status).toBe(200);
    await whale(server, 'SOL');
    await whale(server, 'BTC');
    expect(await nextTarget(alice)).toBe('BTC');
    expect(await selected(server, KEYS.alice)).toEqual(['ETH', 'BTC']);
    // History and the REST list follow the selection too.
    const listed = (await http(server, 'GET', '/v1/streams/whale-alerts/posts', { key: KEYS.alice })).body.posts;
    expect(new Set(listed.map((post: { customTarget: string }) => post.customTarget))).toEqual(new Set(['BTC']));
  });

  it('an empty list clears the selection: nothing of the stream is delivered', async () => {
    const server = await startTestServer();
    const bob = await connectAs(server, KEYS.bob);
    await bob.request('on-stream-post', { streamIds: 'whale-alerts,macro-wire' });
    expect(await select(server, KEYS.bob, 'whale-alerts', { customTargets: [] })).toMatchObject({
      status: 200,
      body: { customTargets: [] },
    });
    await whale(server, 'SOL');
    await http(server, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.macroWire,
      body: { content: 'after', contentType: 'rawtext' },
    });
    expect((await bob.nextEvent('stream.post.created')).data.streamId).toBe('macro-wire');
    expect(await selected(server, KEYS.bob)).toEqual([]);
  });

  it.each([
    ['a target in the wrong case', { customTargets: ['SOL', 'btc'] }, 'customTargets[1] "btc"'],
    ['an unknown target', { customTargets: ['DOGE'] }, 'customTargets[0] "DOGE"'],
    ['a duplicate', { customTargets: ['SOL', 'SOL'] }, 'customTargets[1] "SOL"'],
    ['more targets than offered', { customTargets: ['SOL', 'BTC', 'ETH', 'SOL'] }, 'customTargets'],
    ['not an array', { customTargets: 'SOL' }, 'customTargets'],
    ['no list at all', {}, 'customTargets'],
    ['a number in the list', { customTargets: ['SOL', 7] }, 'customTargets[1]'],
  ])('refuses %s with 400 naming it, and changes nothing', async (_name, body, named) => {
    const server = await startTestServer();
    const reply = await select(server, KEYS.bob, 'whale-alerts', body);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid-argument');
    expect(reply.body.error.message).toContain(named);
    expect(await selected(server, KEYS.bob)).toEqual(['SOL']);
  });

  it('refuses a stream that is not custom (400), one not followed (403), an unknown one (404), a bad body and no key', async () => {
    const server = await startTestServer();
    const cases: [string, string, unknown, number, string][] = [
      [KEYS.alice, 'macro-wire', { customTargets: [] }, 400, 'invalid-argument'],
      // newsdesk owns whale-alerts (and gets all of it) but does not follow it.
      [KEYS.newsdesk, 'whale-alerts', { customTargets: ['BTC'] }, 403, 'forbidden'],
      [KEYS.whaleAlerts, 'whale-alerts', { customTargets: ['BTC'] }, 403, 'forbidden'],
      [KEYS.bob, 'no-such-stream', { customTargets: [] }, 404, 'not-found'],
      // Not public, and bob does not follow it: as unknown as a missing one.
      [KEYS.bob, 'crypto-legal', { customTargets: [] }, 404, 'not-found'],
      [KEYS.bob, 'whale-alerts', [], 400, 'bad-request'],
    ];
    for (const [key, streamId, body, status, code] of cases) {
      const reply = await select(server, key, streamId, body);
      expect({ streamId, status: reply.status, code: reply.body.error.code }).toEqual({ streamId, status, code });
    }
    const malformed = await http(server, 'POST', '/v1/streams/whale-alerts/custom-targets', {
      key: KEYS.bob,
      rawBody: '{"customTargets": [',
    });
    expect(malformed.body.error.code).toBe('bad-json');
    const anonymous = await http(server, 'POST', '/v1/streams/whale-alerts/custom-targets', {
      body: { customTargets: [] },
    });
    expect(anonymous.body.error).toEqual({ code: 'unauthorized', message: 'No secret key provided' });
    expect(await selected(server, KEYS.bob)).toEqual(['SOL']);
    const get = await http(server, 'GET', '/v1/streams/whale-alerts/custom-targets', { key: KEYS.bob });
    expect(get.status).toBe(405);
  });

  it('/_admin/reset returns to the seed’s selection', async () => {
    const server = await startTestServer();
    await select(server, KEYS.alice, 'whale-alerts', { customTargets: ['SOL'] });
    const reset = await http(server, 'POST', '/_admin/reset', { body: {} });
    expect(reset.status).toBe(200);
    await adminState(server);
    expect(await selected(server, KEYS.alice)).toEqual(['BTC', 'ETH']);
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'whale-alerts' });
    await whale(server, 'SOL');
    await whale(server, 'ETH');
    expect(await nextTarget(alice)).toBe('ETH');
  });
});
