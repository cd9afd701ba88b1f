import { Writable } from 'node:stream';
import { expect, it } from 'vitest';
import { createLogger } from '../../src/server/logger.js';
import { connectAs, http, KEYS, publish, startTestServer } from '../support/harness.js';
import { describeInBrowser, openPage, UI_TIMEOUT, useBrowser } from '../support/browser.js';

const browser = useBrowser();

describeInBrowser('the dashboard', () => {
  it('shows a post published over WebSocket, and the streams and users with their keys masked', async () => {
    const server = await startTestServer();
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const subscriber = await connectAs(server, KEYS.alice);
    await subscriber.request('on-stream-post', { streamIds: ['macro-wire'], lastPosts: 0 });

    const post = await publish(server, KEYS.macroWire, {
      streamId: 'macro-wire',
      content: '**CPI** prints 3.1%',
      contentType: 'markdown',
    });
    const item = page.locator(`article[data-post-id="${post.id}"]`);
    await item.waitFor({ timeout: UI_TIMEOUT });
    expect(await item.locator('.body strong').textContent()).toBe('CPI');
    expect(await item.getAttribute('data-state')).toBe('visible');

    const row = page.locator('#streams-body tr[data-stream-id="macro-wire"]');
    await row.locator('.subscribers', { hasText: '1' }).waitFor({ timeout: UI_TIMEOUT });
    expect(await row.textContent()).toContain('Macro Wire');
    expect(await page.locator('#users-body tr[data-user-id="alice"]').textContent()).toContain(
      'whale-alerts: BTC, ETH',
    );
    const text = (await page.locator('body').textContent()) ?? '';
    for (const key of Object.values(KEYS)) expect(text).not.toContain(key);
    expect(await row.locator('.key code').textContent()).toBe(`••••${KEYS.macroWire.slice(-4)}`);

    // The copy button puts the whole key on the clipboard.
    await browser().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.httpUrl });
    await row.locator('button.copy').click();
    await page
      .locator('#keys-result', { hasText: 'copied the stream key of macro-wire' })
      .waitFor({ timeout: UI_TIMEOUT });
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(KEYS.macroWire);

    // One stream at a time.
    await page.selectOption('#feed-filter', 'whale-alerts');
    await item.waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
    const shown = await page
      .locator('#feed article:visible')
      .evaluateAll((articles) => articles.map((article) => article.getAttribute('data-stream-id')));
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set(['whale-alerts']));
  });

  it('publishes from the form: a WebSocket subscriber receives the post and the page shows the ack', async () => {
    const server = await startTestServer();
    const subscriber = await connectAs(server, KEYS.alice);
    await subscriber.request('on-stream-post', { streamIds: ['whale-alerts'], lastPosts: 0 });
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page
      .locator('#publish-stream option[value="whale-alerts"]')
      .waitFor({ state: 'attached', timeout: UI_TIMEOUT });

    await page.selectOption('#publish-stream', 'whale-alerts');
    await page.fill('#publish-content', '1,000 BTC moved');
    await page.selectOption('#publish-content-type', 'rawtext');
    await page.fill('#publish-target', 'BTC');
    await page.fill('#publish-idempotency', 'form-1');
    await page.click('#publish-form button[type="submit"]');

    const delivered = await subscriber.nextEvent('stream.post.created', UI_TIMEOUT);
    expect(delivered.data).toMatchObject({
      streamId: 'whale-alerts',
      text: '1,000 BTC moved',
      contentType: 'rawtext',
      customTarget: 'BTC',
      hidden: false,
    });
    await page.locator('#publish-result[data-kind="ok"]').waitFor({ timeout: UI_TIMEOUT });
    expect(await page.locator('#publish-result').textContent()).toBe(`published ${delivered.data.id}`);

    // The same idempotency key again is the same post.
    await page.click('#publish-form button[type="submit"]');
    await page
      .locator('#publish-result', { hasText: `duplicate of ${delivered.data.id}` })
      .waitFor({ timeout: UI_TIMEOUT });
  });

  it('shows the service error when the form publishes something the service refuses', async () => {
    const server = await startTestServer();
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page
      .locator('#publish-stream option[value="whale-alerts"]')
      .waitFor({ state: 'attached', timeout: UI_TIMEOUT });
    await page.selectOption('#publish-stream', 'whale-alerts');
    await page.fill('#publish-content', 'no target');
    await page.click('#publish-form button[type="submit"]');
    await page.locator('#publish-result[data-kind="error"]').waitFor({ timeout: UI_TIMEOUT });
    expect(await page.locator('#publish-result').textContent()).toBe(
      'invalid-argument (400): customTarget is required on custom stream "whale-alerts" (one of BTC, ETH, SOL)',
    );

    await page.selectOption('#publish-stream', 'macro-wire');
    await page.fill('#publish-release', '+soon');
    await page.click('#publish-form button[type="submit"]');
    await page
      .locator('#publish-result', { hasText: 'release time "+soon" is not a duration such as +10m, +2h or +1d' })
      .waitFor({ timeout: UI_TIMEOUT });
    expect((await http(server, 'GET', '/_admin/state')).body.posts).toBe(5);
  });

  it('advancing the clock from the page releases a hidden post, withheld without an admin token until then', async () => {
    const server = await startTestServer();
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const { now } = await server.state();
    const releaseAt = new Date(Date.parse(now) + 30 * 60_000).toISOString();
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'embargoed', releaseAt });

    const item = page.locator(`article[data-post-id="${post.id}"]`);
    await item.locator('.countdown', { hasText: /^releases in (29|30)m/ }).waitFor({ timeout: UI_TIMEOUT });
    expect(await item.getAttribute('data-state')).toBe('hidden');
    expect(await item.locator('.body').textContent()).toBe('(withheld until its release)');

    await page.click('button[data-advance="3600000"]');
    await page.locator(`article[data-post-id="${post.id}"][data-state="released"]`).waitFor({ timeout: UI_TIMEOUT });
    expect(await item.locator('.body').textContent()).toBe('embargoed');
    expect(await item.locator('.released-badge').textContent()).toBe(
      `released ${releaseAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}`,
    );
    expect((await server.state()).clockOffsetMs).toBe(3_600_000);
    await page.locator('#clock-result[data-kind="ok"]').waitFor({ timeout: UI_TIMEOUT });

    await page.fill('#advance-input', 'soon');
    await page.click('#advance-form button[type="submit"]');
    await page
      .locator('#clock-result', { hasText: '"soon" is not a duration such as 90s, 15m, 2h or 3d' })
      .waitFor({ timeout: UI_TIMEOUT });
    await page.fill('#advance-input', '90s');
    await page.click('#advance-form button[type="submit"]');
    await page.locator('[data-count="clockOffsetMs"] dd', { hasText: '3690000' }).waitFor({ timeout: UI_TIMEOUT });
  });

  it('reset empties the feed of everything published since the seed', async () => {
    const server = await startTestServer();
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const seeded = await page.locator('#feed article').count();
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'gone after reset' });
    await page.locator(`article[data-post-id="${post.id}"]`).waitFor({ timeout: UI_TIMEOUT });

    await page.click('#reset');
    // The feed is replaced in one go by the seed's posts.
    await page.locator(`article[data-post-id="${post.id}"]`).waitFor({ state: 'detached', timeout: UI_TIMEOUT });
    await page.locator('#clock-result', { hasText: 'reset to the seed' }).waitFor({ timeout: UI_TIMEOUT });
    expect(await page.locator('#feed article').count()).toBe(seeded);
    expect((await server.state()).posts).toBe(seeded);
  });
});

describeInBrowser('the dashboard with an admin token', () => {
  const TOKEN = 'dash-token-0123456789';

  it('takes the token from the #token= fragment, drops it from the address, and never sends it in a URL', async () => {
    const server = await startTestServer({ adminToken: TOKEN });
    const watched = await openPage(browser(), `${server.httpUrl}/#token=${TOKEN}`);
    await watched.page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    await watched.page.locator('#streams-body tr[data-stream-id="macro-wire"]').waitFor({ timeout: UI_TIMEOUT });
    expect(watched.page.url()).toBe(`${server.httpUrl}/`);
    expect(await watched.page.locator('#token-form').isHidden()).toBe(true);
    expect(watched.requests.filter((url) => url.includes(TOKEN))).toEqual([]);
  });

  it('publishes a timed post from the form, and no key or token reaches the log', async () => {
    let log = '';
    const out = new Writable({
      write(chunk, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    const server = await startTestServer({ adminToken: TOKEN, logger: createLogger('json', out) });
    const { page } = await openPage(browser(), `${server.httpUrl}/#token=${TOKEN}`);
    await page
      .locator('#publish-stream option[value="macro-wire"]')
      .waitFor({ state: 'attached', timeout: UI_TIMEOUT });
    await page.selectOption('#publish-stream', 'macro-wire');
    await page.fill('#publish-content', 'in ten minutes');
    await page.fill('#publish-release', '+10m');
    await page.click('#publish-form button[type="submit"]');
    await page.locator('#publish-result[data-kind="ok"]', { hasText: 'hidden until' }).waitFor({ timeout: UI_TIMEOUT });
    const id = /^published (\S+), hidden until (\S+)$/.exec((await page.locator('#publish-result').textContent())!);
    expect(id).not.toBeNull();
    await page.locator(`article[data-post-id="${id![1]}"][data-state="hidden"]`).waitFor({ timeout: UI_TIMEOUT });
    // Behind the admin token the page reads a hidden post as its owner does.
    expect(await page.locator(`article[data-post-id="${id![1]}"] .body`).textContent()).toBe('in ten minutes\n');
    const releaseIn = Date.parse(id![2]!) - Date.parse((await server.state()).now);
    // Ten minutes from the service's now when the form was sent (+10m, not +10s nor +10h).
    expect(releaseIn).toBeGreaterThan(60_000);
    expect(releaseIn).toBeLessThanOrEqual(10 * 60_000);

    await page.click('#reset');
    await page.locator(`article[data-post-id="${id![1]}"]`).waitFor({ state: 'detached', timeout: UI_TIMEOUT });
    expect(log).toContain('"msg":"published"');
    expect(log).toContain('"msg":"reset to seed"');
    for (const secret of [TOKEN, ...Object.values(KEYS)]) expect(log).not.toContain(secret);
  });

  it('asks for the token when it has none, and works once it is typed', async () => {
    const server = await startTestServer({ adminToken: TOKEN });
    const { page } = await openPage(browser(), `${server.httpUrl}/`);
    await page.locator('#feed-status[data-status="unauthorized"]').waitFor({ timeout: UI_TIMEOUT });
    await page.locator('#token-form').waitFor({ timeout: UI_TIMEOUT });

    await page.fill('#token-input', 'wrong-token');
    await page.click('#token-form button[type="submit"]');
    await page.locator('#token-form').waitFor({ timeout: UI_TIMEOUT });
    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const post = await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'with a token' });
    await page.locator(`article[data-post-id="${post.id}"]`).waitFor({ timeout: UI_TIMEOUT });
  });
});

describeInBrowser('the dashboard when serve restarts', () => {
  it('reconnects to the new serve on the same port and shows its posts', async () => {
    const first = await startTestServer();
    const { page } = await openPage(browser(), `${first.httpUrl}/`);
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const before = await publish(first, KEYS.macroWire, { streamId: 'macro-wire', content: 'before the restart' });
    await page.locator(`article[data-post-id="${before.id}"]`).waitFor({ timeout: UI_TIMEOUT });

    await first.close();
    await page.locator('#feed-status[data-status="down"]').waitFor({ timeout: UI_TIMEOUT });
    const second = await startTestServer({ port: first.port });
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    const after = await publish(second, KEYS.macroWire, { streamId: 'macro-wire', content: 'after the restart' });
    await page.locator(`article[data-post-id="${after.id}"]`).waitFor({ timeout: UI_TIMEOUT });
    // The new serve's snapshot replaced the old one's posts.
    expect(await page.locator(`article[data-post-id="${before.id}"]`).count()).toBe(0);
  });
});
