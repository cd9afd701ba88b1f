import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { afterTest, KEYS, publish, startTestServer } from '../support/harness.js';
import { describeInBrowser, openPage, UI_TIMEOUT, useBrowser } from '../support/browser.js';

// evil.test resolves to this machine, as a DNS name pointing at 127.0.0.1 would.
const browser = useBrowser(['--host-resolver-rules=MAP evil.test 127.0.0.1']);

/** A blank page on another port: another origin. */
async function otherOrigin(): Promise<number> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>elsewhere</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterTest(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** What a script on that page gets when it tries the dashboard's and the admin's endpoints. */
async function tryAdmin(page: Page, target: string) {
  return page.evaluate(async (base) => {
    const attempt = async (path: string, init?: RequestInit) => {
      try {
        const response = await fetch(`${base}${path}`, init);
        return `read ${response.status}: ${await response.text()}`;
      } catch (error) {
        return `blocked: ${(error as Error).name}`;
      }
    };
    const json = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };
    return {
      state: await attempt('/_admin/state'),
      events: await attempt('/_admin/events'),
      directory: await attempt('/_admin/directory'),
      reset: await attempt('/_admin/reset', json),
      clock: await attempt('/_admin/clock', { ...json, body: '{"advanceMs":60000}' }),
      // A "simple" request needs no preflight, and its answer is opaque; it must still change nothing.
      resetSimple: await attempt('/_admin/reset', { method: 'POST', mode: 'no-cors', body: '{}' }),
    };
  }, target);
}

const ALL_BLOCKED = {
  state: 'blocked: TypeError',
  events: 'blocked: TypeError',
  directory: 'blocked: TypeError',
  reset: 'blocked: TypeError',
  clock: 'blocked: TypeError',
  resetSimple: 'read 0: ',
};

describeInBrowser('a page on another origin', () => {
  for (const host of ['127.0.0.1', 'localhost', 'evil.test']) {
    it(`cannot read or change anything through the admin endpoints or the events feed (${host})`, async () => {
      const server = await startTestServer();
      await publish(server, KEYS.macroWire, { streamId: 'macro-wire', content: 'still here' });
      const port = await otherOrigin();
      const { page } = await openPage(browser(), `http://${host}:${port}/`);

      expect(await tryAdmin(page, server.httpUrl)).toEqual(ALL_BLOCKED);
      const state = await server.state();
      expect(state.clockOffsetMs).toBe(0);
      expect(state.posts).toBe(6);
    });
  }

  it(
    'cannot frame the dashboard',
    async () => {
      const server = await startTestServer();
      const port = await otherOrigin();
      const { page } = await openPage(browser(), `http://127.0.0.1:${port}/`);
      const loaded = page.waitForEvent('console', {
        predicate: (message) => message.text().includes('frame-ancestors'),
      });
      await page.evaluate((src) => {
        // Runs in the page (the tests are type-checked without the DOM's types).
        const { document } = globalThis as any;
        const frame = document.createElement('iframe');
        frame.src = src;
        document.body.append(frame);
      }, `${server.httpUrl}/`);
      expect((await loaded).text()).toContain(
        `violates the following Content Security Policy directive: "frame-ancestors 'none'"`,
      );
    },
    UI_TIMEOUT,
  );
});
