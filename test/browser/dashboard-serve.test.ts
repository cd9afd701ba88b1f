import { expect, it } from 'vitest';
import { client, ensureBuilt } from '../support/cli.js';
import { jsonLines } from '../support/cli-output.js';
import { describeInBrowser, openPage, UI_TIMEOUT, useBrowser } from '../support/browser.js';

const browser = useBrowser();

describeInBrowser('serve and its dashboard', () => {
  it('prints the dashboard URL at start-up, and the page there shows the service', async () => {
    ensureBuilt();
    const serve = client(['serve', '--port', '0']);
    const pattern = /^dashboard (http:\/\/127\.0\.0\.1:\d+\/)$/m;
    await serve.waitFor((out) => pattern.test(out.stdout), 'the dashboard line');
    const url = pattern.exec(serve.stdout)![1]!;
    expect(serve.stdout).toContain(`listening on ${url.replace('http', 'ws').slice(0, -1)}\n`);

    const { page } = await openPage(browser(), url);
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });
    await page.locator('#streams-body tr[data-stream-id="whale-alerts"]').waitFor({ timeout: UI_TIMEOUT });
    expect(await page.locator('#feed article').count()).toBe(5);
  });

  it('names the dashboard in the JSON start-up line, and not when the admin endpoints are off', async () => {
    ensureBuilt();
    const serve = client(['serve', '--port', '0', '--log-format', 'json']);
    await serve.waitFor((out) => out.stdout.includes('"msg":"listening"'), 'the listening line');
    const listening = jsonLines(serve.stdout.split('\n')[0]!)[0];
    expect(listening.dashboard).toBe(`${listening.httpUrl}/`);

    const off = client(['serve', '--port', '0', '--no-admin']);
    await off.url();
    expect(off.stdout).not.toContain('dashboard');
  });
});
