// Several instances acting as one service in front of one store (serve --workers): each
// holds its own connections and faults, so an admin request that is about them is put to
// every instance, and the answers are merged into the one the service gives.
import type { ConnectionInfo, Fault, KeepAliveRound, WorkerAnswered } from '../../protocol/admin.js';
import { ProtocolError, type ErrorCode } from '../../protocol/errors.js';
import type { FaultRegistry } from './faults.js';

/** An admin request put to every instance. */
export type PeerRequest =
  | { op: 'connections' }
  | { op: 'faults' }
  /** `id`: the same on every instance, so the fault is cleared by one id everywhere. */
  | { op: 'add-fault'; fault: unknown; id: string }
  | { op: 'clear-faults'; id?: string }
  | { op: 'keep-alive' };

/** One instance's answer: a value, or the error it refused with. */
export type PeerAnswer = { ok: true; value: unknown } | { ok: false; code: string; message: string };

/** The answers to a request put to every instance, and which instances gave one in time. */
export interface PeerAnswers {
  answers: PeerAnswer[];
  workers: WorkerAnswered[];
}

/** How an instance reaches the others (the transport is the caller's: IPC under node:cluster). */
export interface PeerLink {
  /** Puts the request to every instance, this one included; the answers given within the deadline. */
  ask(request: PeerRequest): Promise<PeerAnswers>;
  /** Sets how this instance answers a request put by any instance. */
  answer(handler: (request: PeerRequest) => Promise<unknown>): void;
}

/** A value for the whole service, and which instances it was made of. */
export interface Spread<T> {
  value: T;
  workers: WorkerAnswered[];
}

/** What the admin endpoints ask of the whole service instead of this instance. */
export interface SpreadAdmin {
  connections(): Promise<Spread<ConnectionInfo[]>>;
  faults(): Promise<Spread<Fault[]>>;
  addFault(fault: unknown): Promise<Spread<Fault>>;
  clearFaults(id?: string): Promise<Spread<number>>;
  keepAliveRound(): Promise<Spread<KeepAliveRound>>;
}

/** What one instance does when asked (by itself or another). */
export function answerLocally(
  request: PeerRequest,
  local: {
    connections(): ConnectionInfo[];
    faults: FaultRegistry;
    keepAliveRound(): Promise<KeepAliveRound>;
  },
): Promise<unknown> | unknown {
  switch (request.op) {
    case 'connections':
      return local.connections();
    case 'faults':
      return local.faults.list();
    case 'add-fault':
      return local.faults.add(request.fault, request.id);
    case 'clear-faults': {
      const ids = request.id === undefined ? local.faults.list().map((fault) => fault.id) : [request.id];
      return ids.filter((id) => local.faults.clear(id) === 1);
    }
    case 'keep-alive':
      return local.keepAliveRound();
  }
}

/** The values of the instances that answered; when none did, the first refusal, thrown. */
function values<T>({ answers }: PeerAnswers): T[] {
  const ok = answers.filter((answer) => answer.ok);
  if (ok.length === 0) {
    const refusal = answers.find((answer) => !answer.ok);
    if (refusal) throw new ProtocolError(refusal.code as ErrorCode, refusal.message);
  }
  return ok.map((answer) => answer.value as T);
}

/** One entry per fault id: every instance holds a copy of each fault. */
function byId(lists: Fault[][]): Fault[] {
  const faults = new Map<string, Fault>();
  for (const fault of lists.flat()) if (!faults.has(fault.id)) faults.set(fault.id, fault);
  return [...faults.values()];
}

/** Puts `request` to every instance and merges the values of those that answered. */
async function spread<T, R>(link: PeerLink, request: PeerRequest, merge: (values: T[]) => R): Promise<Spread<R>> {
  const answers = await link.ask(request);
  return { value: merge(values<T>(answers)), workers: answers.workers };
}

/**
 * The admin requests that concern connections and faults, answered for the whole service.
 * `idPrefix` names this instance (`w2-`): the fault ids it gives never meet another's.
 */
export function spreadAdmin(link: PeerLink, idPrefix: string): SpreadAdmin {
  let nextFault = 1;
  return {
    connections: () => spread(link, { op: 'connections' }, (lists: ConnectionInfo[][]) => lists.flat()),
    faults: () => spread(link, { op: 'faults' }, byId),
    addFault: (fault) =>
      spread(link, { op: 'add-fault', fault, id: `${idPrefix}f${nextFault++}` }, (views: Fault[]) => {
        const [first] = views;
        if (first === undefined) throw new ProtocolError('unavailable', 'no instance answered');
        // A fault that acts once did so on each instance's own connections.
        if (first.applied === undefined) return first;
        return { ...first, applied: views.reduce((sum, view) => sum + (view.applied ?? 0), 0) };
      }),
    clearFaults: (id) =>
      spread(
        link,
        { op: 'clear-faults', ...(id === undefined ? {} : { id }) },
        (lists: string[][]) => new Set(lists.flat()).size,
      ),
    keepAliveRound: () =>
      spread(link, { op: 'keep-alive' }, (rounds: KeepAliveRound[]) => ({
        pinged: rounds.reduce((sum, round) => sum + round.pinged, 0),
        terminated: rounds.reduce((sum, round) => sum + round.terminated, 0),
      })),
  };
}
