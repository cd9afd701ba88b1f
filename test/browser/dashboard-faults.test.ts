// The connections and faults panels call GET /_admin/connections and /_admin/faults
// (docs/PROTOCOL.md, admin endpoints): these tests need a serve that has them.
import { expect, it } from 'vitest';
import { connectAs, http, KEYS, readByServer, startTestServer } from '../support/harness.js';
import { describeInBrowser, openPage, UI_TIMEOUT, useBrowser } from '../support/browser.js';

const browser = useBrowser();

describeInBrowser('the dashboard connections and faults panels', () => {
  it('lists a connection and closes it with the chosen code and reason', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: ['macro-wire'], lastPosts: 0 });
    const { page } = await openPage(browser(), `${server.httpUrl}/`);

    const row = page.locator('#connections-body tr[data-connection-id]', { hasText: 'alice' });
    await row.waitFor({ timeout: UI_TIMEOUT });
    expect(await row.textContent()).toContain('macro-wire (post)');
    await row.locator('.close-code').selectOption('4000');
    await row.locator('.close-reason').fill('closed from the dashboard');
    await row.locator('.close-connection').click();

    expect(await alice.closed).toEqual({ code: 4000, reason: 'closed from the dashboard' });
    await page.locator('#connections-result[data-kind="ok"]').waitFor({ timeout: UI_TIMEOUT });
    await row.waitFor({ state: 'detached', timeout: UI_TIMEOUT });
  });

  it('keeps a close reason being typed, and its focus, while the list refreshes around it', async () => {
    const server = await startTestServer();
    await connectAs(server, KEYS.alice);
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    const row = page.locator('#connections-body tr[data-connection-id]', { hasText: 'alice' });
    await row.waitFor({ timeout: UI_TIMEOUT });
    await row.locator('.close-reason').fill('half typ');

    // Another connection comes and goes: the list refreshes twice while the reason has the focus.
    const bob = await connectAs(server, KEYS.bob);
    const bobRow = page.locator('#connections-body tr[data-connection-id]', { hasText: 'bob' });
    await bobRow.waitFor({ timeout: UI_TIMEOUT });
    await bob.close();
    await bobRow.waitFor({ state: 'detached', timeout: UI_TIMEOUT });

    expect(await row.locator('.close-reason').inputValue()).toBe('half typ');
    expect(await page.evaluate('document.activeElement?.className')).toBe('close-reason');
  });

  it('runs a keep-alive round: a peer that left the last ping unanswered is terminated and leaves the list', async () => {
    // One instance, and no timed round during the test: each round is a click.
    const server = await startTestServer({ port: 0, keepAliveMs: 3_600_000 });
    const alice = await connectAs(server, KEYS.alice);
    const bob = await connectAs(server, KEYS.bob, { wsOptions: { autoPong: false } });
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    const bobRow = page.locator('#connections-body tr[data-connection-id]', { hasText: 'bob' });
    await bobRow.waitFor({ timeout: UI_TIMEOUT });
    const result = page.locator('#connections-result[data-kind="ok"]');

    await page.click('#keep-alive-round');
    await result.filter({ hasText: '2 pinged, 0 terminated' }).waitFor({ timeout: UI_TIMEOUT });
    await alice.nextEvent('keep-alive');
    await readByServer(alice.ws);
    await page.click('#keep-alive-round');
    await result.filter({ hasText: '1 pinged, 1 terminated' }).waitFor({ timeout: UI_TIMEOUT });
    expect((await bob.closed).code).toBe(1006);
    await bobRow.waitFor({ state: 'detached', timeout: UI_TIMEOUT });
    expect(alice.ws.readyState).toBe(alice.ws.OPEN);
  });

  it('adds a fault, shows it, and clears it', async () => {
    const server = await startTestServer();
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page.locator('#faults-body tr').first().waitFor({ timeout: UI_TIMEOUT });

    await page.selectOption('#fault-type', 'fail-publishes');
    await page.fill('#fault-settings', '{"count": 1, "code": "unavailable", "message": "injected"}');
    await page.click('#fault-form button[type="submit"]');
    const row = page.locator('#faults-body tr[data-fault-id]', { hasText: 'fail-publishes' });
    await row.waitFor({ timeout: UI_TIMEOUT });
    expect((await http(server, 'GET', '/_admin/faults')).body.faults).toMatchObject([
      { type: 'fail-publishes', count: 1, code: 'unavailable' },
    ]);

    // The next publish from the form fails as injected.
    await page.selectOption('#publish-stream', 'macro-wire');
    await page.fill('#publish-content', 'meets the fault');
    await page.click('#publish-form button[type="submit"]');
    await page.locator('#publish-result[data-kind="error"]', { hasText: 'injected' }).waitFor({ timeout: UI_TIMEOUT });

    await page.fill('#fault-settings', '{"count": "three"}');
    await page.click('#fault-form button[type="submit"]');
    await page
      .locator('#faults-result[data-kind="error"]', { hasText: 'invalid-argument' })
      .waitFor({ timeout: UI_TIMEOUT });

    await page.selectOption('#fault-type', 'pause-deliveries');
    await page.click('#fault-form button[type="submit"]');
    await page
      .locator('#faults-body tr[data-fault-id]', { hasText: 'pause-deliveries' })
      .waitFor({ timeout: UI_TIMEOUT });
    await page.click('#faults-clear');
    await page.locator('#faults-body tr[data-fault-id]').first().waitFor({ state: 'detached', timeout: UI_TIMEOUT });
    expect((await http(server, 'GET', '/_admin/faults')).body.faults).toEqual([]);
  });
});
