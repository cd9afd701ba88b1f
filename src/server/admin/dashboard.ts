import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Seed } from '../../protocol/seed.js';
import type { AdminActions } from './admin.js';
import type { AdjustableClock } from '../clock.js';
import { DashboardEvents } from './dashboard-events.js';
import { sendError, sendJson } from '../http-util.js';
import { createTokenCheck } from './admin-token.js';
import type { PostLog } from '../stores/store.js';

/** Where the page's bundle is: next to the bundled server in dist/, or dist/ when running from the sources. */
const ASSET_DIRS = [
  fileURLToPath(new URL('./dashboard/', import.meta.url)),
  fileURLToPath(new URL('../../../dist/dashboard/', import.meta.url)),
];

const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/**
 * Only the page's own files run: no inline script or style, no other origin, no framing.
 * Images in posts are shown as links, so none is loaded from anywhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export interface DashboardOptions {
  seed: Seed;
  /** The posts the live feed shows. */
  store: PostLog;
  clock: AdjustableClock;
  token: string | undefined;
  secure: boolean;
  /** Subscriptions currently covering a stream. */
  subscribers: (streamId: string) => number;
}

/**
 * The web dashboard of `serve`: the page at `/` (static files, strict CSP), and two admin
 * endpoints only it needs: `GET /_admin/directory` (the seed's streams and users with their
 * keys and live subscriber counts) and `GET /_admin/events` (the live feed). Both are
 * protected as the other admin endpoints are, and answer only the page's own origin.
 */
export class Dashboard {
  readonly events: DashboardEvents;
  readonly #options: DashboardOptions;
  readonly #tokenMatches: ((authorization: string | undefined) => boolean) | undefined;
  readonly #assetDir: string | undefined = ASSET_DIRS.find((dir) => existsSync(join(dir, 'index.html')));
  readonly #assets = new Map<string, Buffer>();
  readonly #stopClock: () => void;

  constructor(options: DashboardOptions) {
    this.#options = options;
    this.#tokenMatches = options.token === undefined ? undefined : createTokenCheck(options.token);
    this.events = new DashboardEvents(
      options.store,
      options.clock,
      options.seed.streams.map((stream) => stream.id),
      options.token === undefined ? 'anyone' : 'owner',
    );
    this.#stopClock = options.clock.onAdvance(() => this.events.notify('clock'));
  }

  /** The same actions, telling the feed when state was reset. */
  watch(actions: AdminActions): AdminActions {
    return {
      ...actions,
      reset: async () => {
        await actions.reset();
        this.events.notify('reset');
      },
    };
  }

  /** Answers a dashboard route; false when the path is not one. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const asset = ASSETS[url.pathname];
    if (asset) {
      await this.#sendAsset(req, res, asset);
      return true;
    }
    if (url.pathname !== '/_admin/events' && url.pathname !== '/_admin/directory') return false;
    if (!this.#allowed(req, res)) return true;
    if (req.method !== 'GET') {
      sendError(res, 'bad-request', 'this endpoint accepts GET only', 405, { allow: 'GET' });
      return true;
    }
    if (url.pathname === '/_admin/events') await this.events.open(res);
    else sendJson(res, 200, this.#directory(), { 'x-content-type-options': 'nosniff' });
    return true;
  }

  close(): void {
    this.#stopClock();
    this.events.close();
  }

  /** The admin token when one is set, and the page's own origin only (not even another local port). */
  #allowed(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#tokenMatches && !this.#tokenMatches(req.headers.authorization)) {
      sendError(res, 'unauthorized', 'admin needs Authorization: Bearer <admin token>', 401, {
        'www-authenticate': 'Bearer',
      });
      return false;
    }
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    const ownOrigin = `${this.#options.secure ? 'https' : 'http'}://${req.headers.host ?? ''}`.toLowerCase();
    if (
      // `none`: typed into the address bar by the user, no page involved.
      (site !== undefined && site !== 'same-origin' && site !== 'none') ||
      (origin !== undefined && origin.toLowerCase() !== ownOrigin)
    ) {
      sendError(res, 'forbidden', 'the dashboard endpoints answer the dashboard page only', 403);
      return false;
    }
    return true;
  }

  #directory() {
    const { seed, subscribers } = this.#options;
    return {
      streams: seed.streams.map((stream) => ({
        id: stream.id,
        name: stream.name,
        owner: stream.owner,
        key: stream.key,
        custom: stream.custom,
        customTargets: stream.customTargets,
        subscribers: subscribers(stream.id),
      })),
      users: seed.users.map((user) => ({
        id: user.id,
        name: user.name,
        readerKey: user.readerKey,
        follows: user.follows,
        customTargets: user.customTargets,
      })),
    };
  }

  async #sendAsset(req: IncomingMessage, res: ServerResponse, asset: { file: string; type: string }): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 'bad-request', 'this endpoint accepts GET only', 405, { allow: 'GET, HEAD' });
      return;
    }
    if (this.#assetDir === undefined) {
      sendError(res, 'unavailable', 'the dashboard is not built; run npm run build', 503);
      return;
    }
    let body = this.#assets.get(asset.file);
    if (body === undefined) {
      body = await readFile(join(this.#assetDir, asset.file));
      this.#assets.set(asset.file, body);
    }
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': body.length,
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
