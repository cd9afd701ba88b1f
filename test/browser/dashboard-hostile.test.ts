import { expect, it } from 'vitest';
import { KEYS, publish, startTestServer } from '../support/harness.js';
import { describeInBrowser, openPage, UI_TIMEOUT, useBrowser } from '../support/browser.js';

const browser = useBrowser();

/** Posts that would run code, load something or inject markup if the page rendered them naively. */
const HOSTILE = [
  { contentType: 'rawtext', content: '<script>alert("raw script")</script>' },
  { contentType: 'rawtext', content: '<img src="/x-raw" onerror="alert(1)">' },
  { contentType: 'markdown', content: 'before <script>alert("md script")</script> after' },
  { contentType: 'markdown', content: '<img src="/x-md" onerror="alert(2)">\n\n<iframe src="/x-frame"></iframe>' },
  {
    contentType: 'markdown',
    content: '[click me](javascript:alert(3)) and [data](data:text/html,<script>alert(4)</script>)',
  },
  { contentType: 'markdown', content: '![pixel](http://203.0.113.9/pixel.png) ![local](/x-image)' },
  {
    contentType: 'markdown',
    content: '<a href="javascript:alert(5)" style="color:red">raw link</a> <b onclick="alert(6)">b</b>',
  },
  { contentType: 'markdown', content: '<svg onload="alert(7)"><circle r="4"/></svg><style>body{display:none}</style>' },
  {
    contentType: 'markdown',
    content: '[safe](https://example.com/a?b=1) <details open ontoggle="alert(8)">x</details>',
  },
] as const;

/** What the page may request on its own: itself and its API. */
const ALLOWED_PATHS = new Set([
  '/',
  '/dashboard/app.js',
  '/dashboard/app.css',
  '/_admin/events',
  '/_admin/directory',
  '/_admin/state',
  '/_admin/connections',
  '/_admin/faults',
]);

describeInBrowser('the dashboard with hostile posts', () => {
  it('runs nothing, loads nothing and shows the markup as text', async () => {
    const server = await startTestServer();
    const watched = await openPage(browser(), `${server.httpUrl}/`);
    const { page } = watched;
    await page.locator('#feed-status[data-status="live"]').waitFor({ timeout: UI_TIMEOUT });

    const ids: string[] = [];
    for (const post of HOSTILE) {
      ids.push((await publish(server, KEYS.macroWire, { streamId: 'macro-wire', ...post })).id);
    }
    for (const id of ids) await page.locator(`article[data-post-id="${id}"]`).waitFor({ timeout: UI_TIMEOUT });
    // The page's own refresh after the last post has come and gone: nothing is still on its way.
    await page
      .locator('[data-count="posts"] dd', { hasText: String(5 + HOSTILE.length) })
      .waitFor({ timeout: UI_TIMEOUT });

    const feed = page.locator('#feed');
    expect(await feed.locator('script, img, iframe, svg, style, details, [onerror], [onclick], [style]').count()).toBe(
      0,
    );
    const body = (i: number) => page.locator(`article[data-post-id="${ids[i]}"] .body`);
    expect(await body(0).textContent()).toBe('<script>alert("raw script")</script>');
    expect(await body(1).textContent()).toBe('<img src="/x-raw" onerror="alert(1)">');
    expect((await body(2).textContent())?.trim()).toBe('before <script>alert("md script")</script> after');
    expect(await body(3).textContent()).toContain('<img src="/x-md" onerror="alert(2)">');
    expect(await body(3).textContent()).toContain('<iframe src="/x-frame"></iframe>');
    expect(await body(6).textContent()).toContain('<a href="javascript:alert(5)" style="color:red">raw link</a>');

    // Links: javascript: and data: lose their href; web links open apart, without a referrer.
    const links = [];
    for (const id of ids) {
      links.push(
        ...(await page
          .locator(`article[data-post-id="${id}"] a`)
          .evaluateAll((anchors) =>
            anchors.map((anchor) => [anchor.textContent, anchor.getAttribute('href'), anchor.getAttribute('rel')]),
          )),
      );
    }
    expect(links).toEqual([
      ['click me', null, null],
      ['data', null, null],
      ['pixel', 'http://203.0.113.9/pixel.png', 'noopener noreferrer'],
      ['local', null, null],
      ['safe', 'https://example.com/a?b=1', 'noopener noreferrer'],
    ]);

    expect(watched.dialogs).toEqual([]);
    // A serve without the connections or faults endpoints answers the page's own polls 404: not the posts' doing.
    const apiMissing = /^Failed to load resource: .*404.* \(http:\/\/[^/]+\/_admin\/(connections|faults)\)$/;
    expect(watched.problems.filter((problem) => !apiMissing.test(problem))).toEqual([]);
    const foreign = watched.requests.filter((url) => {
      const parsed = new URL(url);
      return parsed.origin !== server.httpUrl || !ALLOWED_PATHS.has(parsed.pathname);
    });
    expect(foreign).toEqual([]);
  });
});
