import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe } from 'vitest';
import { ensureDashboardBuilt, ROOT } from './cli.js';
import { forEachFile } from './file-hooks.js';
import { afterTest } from './harness.js';

/** Debian's Chromium (`apt-get install chromium`); CI installs it. */
export const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(ROOT, 'test/browser/screenshots');

/** The browser tests run wherever Chromium is installed, and always in CI (where its absence fails them). */
export const skipReason =
  !existsSync(CHROMIUM) && !process.env['CI'] ? `${CHROMIUM} is missing (apt-get install chromium)` : undefined;

if (skipReason) console.warn(`browser tests skipped: ${skipReason}`);

/** `describe`, skipped with the reason when there is no browser to run in. */
export function describeInBrowser(name: string, body: () => void): void {
  describe.skipIf(skipReason !== undefined)(skipReason ? `${name} (skipped: ${skipReason})` : name, body);
}

// The network here may be closed: nothing the browser does on its own may reach out.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** One Chromium per test file, with a fresh profile; `extraArgs` such as host resolver rules. */
export function useBrowser(extraArgs: string[] = []): () => BrowserContext {
  let context: BrowserContext | undefined;
  let profile: string | undefined;
  beforeAll(async () => {
    if (skipReason) return;
    ensureDashboardBuilt();
    profile = mkdtempSync(join(tmpdir(), 'stream-posts-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...ARGS, ...extraArgs],
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });
  return () => {
    if (!context) throw new Error('the browser did not start');
    return context;
  };
}

/** Everything a page did that a safe page must not do on its own. */
export interface WatchedPage {
  page: Page;
  dialogs: string[];
  /** Console errors and warnings, and uncaught exceptions. */
  problems: string[];
  requests: string[];
}

const open = new Set<Page>();

// Registered after the harness's own afterEach, so it runs first (hooks run as a stack):
// a failed test's page is photographed before its server is closed.
forEachFile({
  async afterEach(context) {
    if (context.task.result?.state === 'fail') {
      mkdirSync(SCREENSHOTS, { recursive: true });
      const name = context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 80);
      let index = 0;
      for (const page of open) {
        await page.screenshot({ path: join(SCREENSHOTS, `${name}-${index++}.png`), fullPage: true }).catch(() => {});
      }
    }
    open.clear();
  },
});

/** A new page watching for dialogs, console errors and requests; closed after the test. */
export async function openPage(context: BrowserContext, url: string): Promise<WatchedPage> {
  const page = await context.newPage();
  open.add(page);
  afterTest(() => page.close());
  const watched: WatchedPage = { page, dialogs: [], problems: [], requests: [] };
  page.on('dialog', (dialog) => {
    watched.dialogs.push(dialog.message());
    void dialog.dismiss().catch(() => {});
  });
  page.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warning') return;
    const at = message.location().url;
    watched.problems.push(at ? `${message.text()} (${at})` : message.text());
  });
  page.on('pageerror', (error) => watched.problems.push(error.message));
  page.on('request', (request) => watched.requests.push(request.url()));
  await page.goto(url);
  return watched;
}

/** Generous: a shared machine can be slow, and these only bound how long a failure takes to show. */
export const UI_TIMEOUT = 15_000;
