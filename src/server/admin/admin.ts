// admin/: what a tester drives a local serve with: admin endpoints, the dashboard and its live
// events, injected faults, scenarios (recorded and played) and the state file.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminState, ConnectionInfo, Fault, KeepAliveRound } from '../../protocol/admin.js';
import { ProtocolError } from '../../protocol/errors.js';
import { MAX_FRAME_BYTES } from '../../protocol/limits.js';
import type { AdjustableClock } from '../clock.js';
import type { FaultRegistry } from './faults.js';
import type { Spread, SpreadAdmin } from './admin-peers.js';
import { decodeSegment, parseJsonObject, readBody, sendError, sendJson } from '../http-util.js';
import type { Logger } from '../logger.js';
import { createTokenCheck } from './admin-token.js';
import { isShared, type StoreAdmin } from '../stores/store.js';

export interface AdminContext {
  /** Its figures and reset; on a shared store, the clock every instance shares too. */
  store: StoreAdmin;
  clock: AdjustableClock;
  logger: Logger;
  counts: () => { connections: number; subscriptions: number };
  connections: () => ConnectionInfo[];
  faults: FaultRegistry;
  /** Runs one keep-alive round now (`POST /_admin/keep-alive`). */
  keepAliveRound: () => Promise<KeepAliveRound>;
  /** The store's state as a document (`GET /_admin/export`); absent for a store that keeps its own. */
  exportState?: () => object;
}

const ADMIN_BODY_LIMIT = 4096;
/** A `send-frame` fault carries a whole frame. */
const FAULT_BODY_LIMIT = MAX_FRAME_BYTES + ADMIN_BODY_LIMIT;
const FAULT_PATH = '/_admin/faults/';
// Ten years: far enough for any release time, small enough to stay exact.
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

export interface AdminActions {
  state(): Promise<AdminState>;
  /** Due releases fire, and expired idempotency keys lapse, before this returns. */
  advanceClock(advanceMs: number): Promise<{ now: string; clockOffsetMs: number }>;
  reset(): Promise<void>;
  /** One keep-alive round now, on this instance's connections; the next timed one an interval later. */
  keepAliveRound(): Promise<KeepAliveRound>;
  connections(): ConnectionInfo[];
  /** Rejects with `invalid-argument` naming the field. */
  addFault(fault: unknown): Promise<Fault>;
  faults(): Fault[];
  /** Clears one fault, or all without an id; resolves to how many were cleared. */
  clearFaults(id?: string): number;
  exportState(): Promise<object>;
}

/** What `/_admin/*` does, without HTTP: the library's server calls the same code. */
export function createAdminActions(context: AdminContext): AdminActions {
  const { store, clock, logger, faults } = context;
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
        faults: faults.list(),
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
      if (isShared(store)) await store.advanceClock(advanceMs);
      else clock.advance(advanceMs);
      logger.log('info', 'clock advanced', { advanceMs, offsetMs: clock.offsetMs });
      return { now: new Date(clock.now()).toISOString(), clockOffsetMs: clock.offsetMs };
    },
    async reset() {
      await store.reset();
      faults.clear(undefined, 'reset');
      logger.log('info', 'reset to seed');
    },
    async keepAliveRound() {
      const round = await context.keepAliveRound();
      logger.log('info', 'keep-alive round', { ...round });
      return round;
    },
    connections: context.connections,
    addFault: (fault) => faults.add(fault),
    faults: () => faults.list(),
    clearFaults: (id) => faults.clear(id),
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

type Run = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;

/** `/_admin/*`: reset to the seed, move the clock, read counts, inject faults. Returns false when no route matched. */
export function createAdminHandler(actions: AdminActions, http: AdminHttpOptions, spread?: SpreadAdmin) {
  // Several instances as one service: what is about connections and faults is asked of all,
  // and the reply names the workers asked (`workers`), so one that did not answer is seen.
  const here = <T>(value: T): Partial<Spread<T>> & { value: T } => ({ value });
  const whole = {
    async state() {
      const state = await actions.state();
      if (!spread) return state;
      // The store's figures are the service's already; connections and faults are each instance's.
      const [connections, faults] = await Promise.all([spread.connections(), spread.faults()]);
      const subscriptions = connections.value.reduce((sum, connection) => sum + connection.subscriptions.length, 0);
      const workers = connections.workers.map(({ id, answered }) => ({
        id,
        answered: answered && faults.workers.some((other) => other.id === id && other.answered),
      }));
      return { ...state, connections: connections.value.length, subscriptions, faults: faults.value, workers };
    },
    connections: () => spread?.connections() ?? here(actions.connections()),
    faults: () => spread?.faults() ?? here(actions.faults()),
    addFault: async (fault: unknown) => spread?.addFault(fault) ?? here(await actions.addFault(fault)),
    clearFaults: (id?: string) => spread?.clearFaults(id) ?? here(actions.clearFaults(id)),
    keepAliveRound: async () => spread?.keepAliveRound() ?? here(await actions.keepAliveRound()),
  };
  /** A reply's body: `name` holds the value, beside the workers asked when there are several. */
  const replyOf = (name: string, { value, workers }: Partial<Spread<unknown>>) => ({
    [name]: value,
    ...(workers && { workers }),
  });

  async function advance(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = parseJsonObject(await readBody(req, ADMIN_BODY_LIMIT, http.bodyTimeoutMs));
    sendJson(res, 200, await actions.advanceClock(body['advanceMs'] as number));
  }

  async function addFault(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fault = parseJsonObject(await readBody(req, FAULT_BODY_LIMIT, http.bodyTimeoutMs));
    sendJson(res, 200, replyOf('fault', await whole.addFault(fault)));
  }

  async function clearFault(_req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const id = decodeSegment(url.pathname.slice(FAULT_PATH.length));
    const cleared = await whole.clearFaults(id);
    if (cleared.value === 0) throw new ProtocolError('not-found', `no fault with id "${id.slice(0, 64)}"`);
    sendJson(res, 200, replyOf('cleared', cleared));
  }

  const routes: Record<string, Record<string, Run>> = {
    '/_admin/state': { GET: async (_req, res) => sendJson(res, 200, await whole.state()) },
    '/_admin/clock': { POST: advance },
    '/_admin/export': { GET: async (_req, res) => sendJson(res, 200, await actions.exportState()) },
    '/_admin/reset': {
      POST: async (_req, res) => {
        await actions.reset();
        sendJson(res, 200, { ok: true });
      },
    },
    '/_admin/keep-alive': {
      POST: async (_req, res) => {
        const { value, workers } = await whole.keepAliveRound();
        sendJson(res, 200, { ...value, ...(workers && { workers }) });
      },
    },
    '/_admin/connections': {
      GET: async (_req, res) => sendJson(res, 200, replyOf('connections', await whole.connections())),
    },
    '/_admin/faults': {
      GET: async (_req, res) => sendJson(res, 200, replyOf('faults', await whole.faults())),
      POST: addFault,
      DELETE: async (_req, res) => sendJson(res, 200, replyOf('cleared', await whole.clearFaults())),
    },
  };
  const oneFault: Record<string, Run> = { DELETE: clearFault };

  const tokenMatches = http.token === undefined ? undefined : createTokenCheck(http.token);

  return async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    const methods =
      routes[path] ?? (path.startsWith(FAULT_PATH) && path.length > FAULT_PATH.length ? oneFault : undefined);
    if (!methods) return false;
    if (tokenMatches && !tokenMatches(req.headers.authorization)) {
      sendError(res, 'unauthorized', 'admin needs Authorization: Bearer <admin token>', 401, {
        'www-authenticate': 'Bearer',
      });
      return true;
    }
    const run = Object.hasOwn(methods, req.method ?? '') ? methods[req.method!] : undefined;
    if (!run) {
      const allow = Object.keys(methods).join(', ');
      sendError(res, 'bad-request', `this endpoint accepts ${allow} only`, 405, { allow });
      return true;
    }
    // A web page can send a text/plain or form POST cross-site without asking; it cannot
    // send application/json without a CORS preflight, which this server never grants.
    if (req.method === 'POST' && !isJson(req.headers['content-type'])) {
      sendError(res, 'bad-request', 'admin requests need content-type: application/json', 415);
      return true;
    }
    try {
      await run(req, res, url);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      sendError(res, error.code, error.message);
    }
    return true;
  };
}
