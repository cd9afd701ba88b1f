import { describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../../src/server/admin/dashboard.js';
import { openEvents } from '../support/admin-events.js';
import { connectAs, http, KEYS, publish, startTestServer } from '../support/harness.js';

describe('the dashboard over HTTP', () => {
  it('serves the page and its files with a strict Content-Security-Policy', async () => {
    const server = await startTestServer();
    for (const [path, type] of [
      ['/', 'text/html; charset=utf-8'],
      ['/dashboard/app.js', 'text/javascript; charset=utf-8'],
      ['/dashboard/app.css', 'text/css; charset=utf-8'],
    ] as const) {
      const response = await fetch(`${server.httpUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe(type);
      expect(response.headers.get('content-security-policy'), path).toBe(DASHBOARD_CSP);
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    expect(DASHBOARD_CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    const page = await (await fetch(`${server.httpUrl}/`)).text();
    expect(page).not.toMatch(/<script>|<style>|style="/);
    expect((await http(server, 'POST', '/', { body: {} })).status).toBe(405);
  });

  it('lists the streams and users with their keys and subscriber counts, for the page own origin only', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: ['whale-alerts'], lastPosts: 0 });
    const { status, body } = await http(server, 'GET', '/_admin/directory');
    expect(status).toBe(200);
    expect(body.streams.find((stream: any) => stream.id === 'whale-alerts')).toEqual({
      id: 'whale-alerts',
      name: expect.any(String),
      owner: 'newsdesk',
      key: KEYS.whaleAlerts,
      custom: true,
      customTargets: ['BTC', 'ETH', 'SOL'],
      subscribers: 1,
    });
    expect(body.users.find((user: any) => user.id === 'alice')).toMatchObject({ readerKey: KEYS.alice });

    const own = new URL(server.httpUrl).host;
    const sameOrigin = { origin: server.httpUrl, 'sec-fetch-site': 'same-origin', host: own };
    expect((await http(server, 'GET', '/_admin/directory', { headers: sameOrigin })).status).toBe(200);
    const typed = { 'sec-fetch-site': 'none' };
    expect((await http(server, 'GET', '/_admin/directory', { headers: typed })).status).toBe(200);
    const refusedHeaders: Record<string, string>[] = [
      { origin: 'http://localhost:5173' },
      { origin: server.httpUrl.replace('127.0.0.1', 'localhost') },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of refusedHeaders) {
      for (const path of ['/_admin/directory', '/_admin/events']) {
        const refused = await http(server, 'GET', path, { headers });
        expect(refused.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(refused.body.error.message).toBe('the dashboard endpoints answer the dashboard page only');
      }
    }
  });

  it('needs the admin token for its data when one is set, not for the page', async () => {
    const server = await startTestServer({ adminToken: 'dash-token-0123456789' });
    expect((await fetch(`${server.httpUrl}/`)).status).toBe(200);
    for (const path of ['/_admin/directory', '/_admin/events']) {
      const refused = await http(server, 'GET', path);
      expect(refused.status, path).toBe(401);
      expect(refused.body.error.message).toBe('admin needs Authorization: Bearer <admin token>');
    }
    const events = await openEvents(server.httpUrl, { authorization: 'Bearer dash-token-0123456789' });
    expect(events.response.status).toBe(200);
    expect((await events.next('snapshot')).data.posts).toHaveLength(5);
  });

  it('is off with the admin endpoints', async () => {
    const server = await startTestServer({ admin: false });
    for (const path of ['/', '/dashboard/app.js', '/_admin/directory', '/_admin/events']) {
      expect((await fetch(`${server.httpUrl}${path}`)).status, path).toBe(404);
    }
  });

  it('feeds every post as published and released, clock moves, resets and connection changes', async () => {
    const server = await startTestServer();
    const events = await openEvents(server.httpUrl);
    expect(events.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const snapshot = await events.next('snapshot');
    expect(snapshot.data.posts).toHaveLength(5);
    expect(Date.parse(snapshot.data.now)).not.toBeNaN();

    const { now } = await server.state();
    const releaseAt = new Date(Date.parse(now) + 60_000).toISOString();
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'embargo', releaseAt });
    await events.next('connections');
    const created = await events.next('post');
    // Without an admin token the feed is anybody's on the page's origin: a hidden post comes withheld.
    expect(created.data).toMatchObject({
      type: 'created',
      post: { id: post.id, hidden: true, text: null, metadata: null },
    });

    const advanced = await server.advanceClock(60_000);
    const released = await events.next('post');
    expect(released.data).toMatchObject({ type: 'released', post: { id: post.id, hidden: false, text: 'embargo' } });
    expect(Date.parse((await events.next('clock')).data.now)).toBeGreaterThanOrEqual(Date.parse(releaseAt));
    expect(advanced.clockOffsetMs).toBe(60_000);

    await server.reset();
    await events.next('reset');
    const fresh = await events.next('snapshot');
    expect(fresh.data.posts).toHaveLength(5);
    expect(fresh.data.posts.map((seeded: any) => seeded.id)).not.toContain(post.id);
  });

  it('says when faults change, set through the library, applied once or cleared', async () => {
    const server = await startTestServer();
    const events = await openEvents(server.httpUrl);
    await events.next('snapshot');
    const fault = await server.faults.add({ type: 'pause-deliveries' });
    await events.next('faults');
    await server.faults.add({ type: 'close', code: 1012 });
    await events.next('faults');
    expect(server.faults.clear(fault.id)).toBe(1);
    await events.next('faults');
  });
});
