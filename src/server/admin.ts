import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProtocolError } from '../protocol/errors.js';
import type { AdjustableClock } from './clock.js';
import { parseJsonObject, readBody, sendError, sendJson } from './http-util.js';
import type { Logger } from './logger.js';
import type { Store } from './store.js';

export interface AdminContext {
  store: Store;
  clock: AdjustableClock;
  logger: Logger;
  counts: () => { connections: number; subscriptions: number };
}

const ADMIN_BODY_LIMIT = 4096;
// Ten years: far enough for any release time, small enough to stay exact.
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

/** `/_admin/*`: reset to the seed, move the clock, read counts. Returns false when no route matched. */
export function createAdminHandler(context: AdminContext) {
  const { store, clock, logger } = context;

  async function state(res: ServerResponse): Promise<void> {
    const stats = await store.stats();
    sendJson(res, 200, {
      ...context.counts(),
      posts: stats.posts,
      scheduledReleases: stats.scheduledReleases,
      idempotencyKeys: stats.idempotencyKeys,
      now: new Date(clock.now()).toISOString(),
      clockOffsetMs: clock.offsetMs,
    });
  }

  async function advance(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = parseJsonObject(await readBody(req, ADMIN_BODY_LIMIT));
    const advanceMs = body['advanceMs'];
    if (typeof advanceMs !== 'number' || !Number.isSafeInteger(advanceMs) || advanceMs < 0 || advanceMs > MAX_ADVANCE_MS) {
      throw new ProtocolError('invalid-argument', `advanceMs must be an integer from 0 to ${MAX_ADVANCE_MS}`);
    }
    // Due releases fire synchronously inside advance(), before the reply.
    clock.advance(advanceMs);
    logger.log('info', 'clock advanced', { advanceMs, offsetMs: clock.offsetMs });
    sendJson(res, 200, { now: new Date(clock.now()).toISOString(), clockOffsetMs: clock.offsetMs });
  }

  async function reset(res: ServerResponse): Promise<void> {
    await store.reset();
    logger.log('info', 'reset to seed');
    sendJson(res, 200, { ok: true });
  }

  const routes: Record<string, { method: string; run: (req: IncomingMessage, res: ServerResponse) => Promise<void> }> = {
    '/_admin/state': { method: 'GET', run: (_req, res) => state(res) },
    '/_admin/clock': { method: 'POST', run: advance },
    '/_admin/reset': { method: 'POST', run: (_req, res) => reset(res) },
  };

  return async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const route = routes[url.pathname];
    if (!route) return false;
    if (req.method !== route.method) {
      sendError(res, 'bad-request', `this endpoint accepts ${route.method} only`, 405, { allow: route.method });
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
