import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminState } from '../protocol/admin.js';
import { ProtocolError } from '../protocol/errors.js';
import type { AdjustableClock } from './clock.js';
import { parseJsonObject, readBody, sendError, sendJson } from './http-util.js';
import type { Logger } from './logger.js';
import { createTokenCheck } from './perimeter.js';
import type { Store } from './store.js';

export interface AdminContext {
  store: Store;
  clock: AdjustableClock;
  logger: Logger;
  counts: () => { connections: number; subscriptions: number };
  /** The store's state as a document (`GET /_admin/export`); absent for a store that keeps its own. */
  exportState?: () => object;
}

const ADMIN_BODY_LIMIT = 4096;
// Ten years: far enough for any release time, small enough to stay exact.
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

export interface AdminActions {
  state(): Promise<AdminState>;
  /** Due releases fire, and expired idempotency keys lapse, before this returns. */
  advanceClock(advanceMs: number): Promise<{ now: string; clockOffsetMs: number }>;
  reset(): Promise<void>;
  exportState(): Promise<object>;
}

/** What `/_admin/*` does, without HTTP: the library's server calls the same code. */
export function createAdminActions(context: AdminContext): AdminActions {
  const { store, clock, logger } = context;
  return {
    async state() {
      const stats = await store.stats();
      return {
        ...context.counts(),
        posts: stats.posts,
        scheduledReleases: stats.scheduledReleases,
        idempotencyKeys: stats.idempotencyKeys,
        now: new Date(clock.now()).toISOString(),
        clockOffsetMs: clock.offsetMs,
      };
    },
    async advanceClock(advanceMs) {
      if (
        typeof advanceMs !== 'number' ||
        !Number.isSafeInteger(advanceMs) ||
        advanceMs < 0 ||
        advanceMs > MAX_ADVANCE_MS
      ) {
        throw new ProtocolError('invalid-argument', `advanceMs must be an integer from 0 to ${MAX_ADVANCE_MS}`);
      }
      // Due releases fire (synchronously inside advance() for the memory store) before the reply.
      if (store.advanceClock) await store.advanceClock(advanceMs);
      else clock.advance(advanceMs);
      logger.log('info', 'clock advanced', { advanceMs, offsetMs: clock.offsetMs });
      return { now: new Date(clock.now()).toISOString(), clockOffsetMs: clock.offsetMs };
    },
    async reset() {
      await store.reset();
      logger.log('info', 'reset to seed');
    },
    async exportState() {
      if (!context.exportState)
        throw new ProtocolError('bad-request', 'the Redis store keeps its state in Redis: read it there');
      return context.exportState();
    },
  };
}

/** `/_admin/*`: reset to the seed, move the clock, read counts. Returns false when no route matched. */
function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

export interface AdminHttpOptions {
  bodyTimeoutMs: number;
  /** When set, every admin request needs `Authorization: Bearer <token>`. */
  token?: string | undefined;
}

/** `/_admin/*`: reset to the seed, move the clock, read counts. Returns false when no route matched. */
export function createAdminHandler(actions: AdminActions, http: AdminHttpOptions) {
  async function advance(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = parseJsonObject(await readBody(req, ADMIN_BODY_LIMIT, http.bodyTimeoutMs));
    sendJson(res, 200, await actions.advanceClock(body['advanceMs'] as number));
  }

  const routes: Record<string, { method: string; run: (req: IncomingMessage, res: ServerResponse) => Promise<void> }> =
    {
      '/_admin/state': { method: 'GET', run: async (_req, res) => sendJson(res, 200, await actions.state()) },
      '/_admin/clock': { method: 'POST', run: advance },
      '/_admin/export': { method: 'GET', run: async (_req, res) => sendJson(res, 200, await actions.exportState()) },
      '/_admin/reset': {
        method: 'POST',
        run: async (_req, res) => {
          await actions.reset();
          sendJson(res, 200, { ok: true });
        },
      },
    };

  const tokenMatches = http.token === undefined ? undefined : createTokenCheck(http.token);

  return async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const route = routes[url.pathname];
    if (!route) return false;
    if (tokenMatches && !tokenMatches(req.headers.authorization)) {
      sendError(res, 'unauthorized', 'admin needs Authorization: Bearer <admin token>', 401, {
        'www-authenticate': 'Bearer',
      });
      return true;
    }
    if (req.method !== route.method) {
      sendError(res, 'bad-request', `this endpoint accepts ${route.method} only`, 405, { allow: route.method });
      return true;
    }
    // A web page can send a text/plain or form POST cross-site without asking; it cannot
    // send application/json without a CORS preflight, which this server never grants.
    if (route.method === 'POST' && !isJson(req.headers['content-type'])) {
      sendError(res, 'bad-request', 'admin requests need content-type: application/json', 415);
      return true;
    }
    try {
      await route.run(req, res);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      sendError(res, error.code, error.message);
    }
    return true;
  };
}
