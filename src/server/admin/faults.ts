import {
  ONE_SHOT_FAULTS,
  parseFault,
  type Fault,
  type FaultInput,
  type FaultScope,
  type FaultScopeView,
} from '../../protocol/admin.js';
import { ProtocolError } from '../../protocol/errors.js';
import type { AckFault } from '../fault-hooks.js';
import { keyIdOf } from '../ws/key-limits.js';
import type { HookedConnection, SessionHooks } from '../ws/outlet.js';
import type { Logger } from '../logger.js';
import { isPending, type Awaitable, type Identity } from '../stores/store.js';
import { FaultOutlet } from './fault-outlet.js';

export interface FaultHost {
  connections(): Iterable<HookedConnection>;
  authenticate(key: string): Awaitable<Identity | undefined>;
  logger: Logger;
  /** Posts a paused connection may have held for it before it is dropped as a slow reader. */
  maxBufferedBytes: number;
  /** Told after a fault is set, applied once, expires or is cleared (the dashboard's feed). */
  onChange?: () => void;
}

/** Who a fault is matched against: a connection, or a REST publish (which has none). */
interface Subject {
  connection?: string;
  user?: string;
  /** The stream key's stream, or the stream a publish goes to. */
  stream?: string;
  /** Who the key is (`keyIdOf`): connections drop the key itself once authenticated. */
  keyId?: string;
}

/** A scope as matched: a key given in it is held as who the key is, never as the key. */
type MatchScope = Omit<FaultScope, 'key'> & { keyId?: string };

interface ActiveFault {
  view: Fault;
  input: FaultInput;
  scope: MatchScope | undefined;
  /** Publishes left for a count-limited fault. */
  remaining: number;
  timer: NodeJS.Timeout | undefined;
}

function matches(scope: MatchScope | undefined, subject: Subject): boolean {
  if (scope === undefined) return true;
  return (
    (scope.connection === undefined || scope.connection === subject.connection) &&
    (scope.user === undefined || scope.user === subject.user) &&
    (scope.stream === undefined || scope.stream === subject.stream) &&
    (scope.keyId === undefined || scope.keyId === subject.keyId)
  );
}

function subjectOf(connection: HookedConnection): Subject {
  const { identity } = connection;
  return {
    connection: connection.id,
    user: identity?.userId,
    stream: identity?.streamId,
    keyId: identity && keyIdOf(identity),
  };
}

/** A status's error code, for the body of a refused upgrade. */
function codeForStatus(status: number): string {
  const codes: Record<number, string> = {
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not-found',
    429: 'rate-limited',
  };
  return codes[status] ?? (status >= 500 ? 'unavailable' : 'bad-request');
}

/**
 * The faults injected through the admin endpoints, held by this server instance only (with
 * a Redis store each instance has its own). What applies to a connection is installed
 * around it as its outlet (fault-outlet.ts), recomputed whenever the set changes, so the
 * paths that run for every frame never ask whether a fault is set.
 */
export class FaultRegistry implements SessionHooks {
  readonly #host: FaultHost;
  readonly #active = new Map<string, ActiveFault>();
  #nextId = 1;

  constructor(host: FaultHost) {
    this.#host = host;
  }

  list(): Fault[] {
    return [...this.#active.values()].map((fault) => ({ ...fault.view }));
  }

  /**
   * Checks, applies and (unless it acts once) keeps a fault. Rejects with `invalid-argument`
   * naming the field. `id`: one given by the service's instances together (admin-peers.ts).
   */
  async add(raw: unknown, givenId?: string): Promise<Fault> {
    const input = parseFault(raw);
    const resolved = input.scope && (await this.#resolveScope(input.scope));
    const id = givenId ?? `f${this.#nextId++}`;
    const view: Fault = { ...input, id, createdAt: new Date().toISOString() };
    if (resolved) view.scope = resolved.view;
    const scope = resolved?.match;
    const fields = this.#logFields(view);
    if (ONE_SHOT_FAULTS.has(input.type)) {
      view.applied = this.#applyOnce(input, scope);
      this.#host.logger.log('info', 'fault applied', { ...fields, applied: view.applied });
      this.#host.onChange?.();
      return view;
    }
    const fault: ActiveFault = {
      view,
      input,
      scope,
      remaining: 'count' in input ? (input.count ?? 0) : 0,
      timer: undefined,
    };
    if (input.durationMs !== undefined) {
      view.expiresAt = new Date(Date.now() + input.durationMs).toISOString();
      fault.timer = setTimeout(() => this.#remove(id, 'expired'), input.durationMs);
      fault.timer.unref();
    }
    this.#active.set(id, fault);
    this.#host.logger.log('info', 'fault set', fields);
    this.#refreshAll();
    this.#host.onChange?.();
    return { ...view };
  }

  /** Clears one fault (false when there is none with that id), or every one. */
  clear(id?: string, why = 'cleared'): number {
    if (id !== undefined) return this.#remove(id, why) ? 1 : 0;
    const ids = [...this.#active.keys()];
    for (const each of ids) this.#remove(each, why, false);
    if (ids.length > 0) {
      this.#refreshAll();
      this.#host.onChange?.();
    }
    return ids.length;
  }

  /** Recomputes what applies to a connection: call when it opens and once its key is known. */
  attach(connection: HookedConnection): void {
    if (this.#active.size > 0 || connection.outlet !== connection) this.#refresh(connection);
  }

  /**
   * The HTTP status to refuse a WebSocket upgrade with, or undefined to let it through.
   * Synchronous (undefined at once) unless a refusal scoped by user or stream needs the key looked up.
   */
  refusal(key: string | undefined): number | undefined | Promise<number | undefined> {
    // Every upgrade asks: with no fault set (nearly always), nothing is built to answer.
    if (this.#active.size === 0) return undefined;
    const refusing = [...this.#active.values()].filter((fault) => fault.input.type === 'refuse-connections');
    if (refusing.length === 0) return undefined;
    const statusFor = (subject: Subject) => {
      const fault = refusing.find((each) => matches(each.scope, subject));
      return fault && (fault.input as { status: number }).status;
    };
    // Unscoped refusals need no lookup; a scoped one can match only a connection that sends a key.
    if (key === undefined || refusing.every((fault) => fault.scope === undefined)) return statusFor({});
    const statusOf = (identity: Identity | undefined) =>
      statusFor(identity ? { user: identity.userId, stream: identity.streamId, keyId: keyIdOf(identity) } : {});
    const identity = this.#host.authenticate(key);
    return isPending(identity) ? identity.then(statusOf) : statusOf(identity);
  }

  refusalBody(status: number): string {
    return JSON.stringify({ error: { code: codeForStatus(status), message: 'refused by an injected fault' } });
  }

  /**
   * Called before a publish runs (over WebSocket, or REST with no connection): throws the
   * error a `fail-publishes` fault injects (counting it), or returns the `drop-acks` fault
   * that matches, for `dropsAck` once the post is stored.
   */
  onPublish(identity: Identity, streamId: string, connection?: string): AckFault | undefined {
    if (this.#active.size === 0) return undefined;
    const subject: Subject = {
      user: identity.userId,
      stream: streamId,
      keyId: keyIdOf(identity),
      ...(connection ? { connection } : {}),
    };
    for (const fault of this.#active.values()) {
      const { input } = fault;
      if ((input.type !== 'fail-publishes' && input.type !== 'drop-acks') || !matches(fault.scope, subject)) continue;
      if (input.type === 'drop-acks') return { fault };
      this.#countDown(fault);
      throw new ProtocolError(
        input.code as ProtocolError['code'],
        input.message ?? 'publish failed by an injected fault; nothing was stored',
        'add-stream-post',
      );
    }
    return undefined;
  }

  /** Whether a stored post's acknowledgement is lost: yes while its `drop-acks` fault is still in force (counting it). */
  dropsAck(matched: AckFault): boolean {
    const fault = matched.fault as ActiveFault;
    if (this.#active.get(fault.view.id) !== fault) return false;
    this.#countDown(fault);
    return true;
  }

  #countDown(fault: ActiveFault): void {
    if (fault.remaining === 0) return;
    fault.remaining -= 1;
    if (fault.remaining === 0) this.#remove(fault.view.id, 'used up');
    else (fault.view as { count?: number }).count = fault.remaining;
  }

  #applyOnce(input: FaultInput, scope: MatchScope | undefined): number {
    let applied = 0;
    for (const connection of [...this.#host.connections()]) {
      if (!matches(scope, subjectOf(connection))) continue;
      applied += 1;
      if (input.type === 'close') connection.close(input.code ?? 1012, input.reason ?? '');
      else if (input.type === 'send-frame') connection.outlet.writeFrame(input.frame);
    }
    return applied;
  }

  #remove(id: string, why: string, refresh = true): boolean {
    const fault = this.#active.get(id);
    if (!fault) return false;
    clearTimeout(fault.timer);
    this.#active.delete(id);
    this.#host.logger.log('info', 'fault cleared', { fault: id, type: fault.input.type, why });
    if (refresh) {
      this.#refreshAll();
      this.#host.onChange?.();
    }
    return true;
  }

  #refreshAll(): void {
    for (const connection of this.#host.connections()) this.#refresh(connection);
  }

  #refresh(connection: HookedConnection): void {
    const subject = subjectOf(connection);
    let silent = false;
    let noPongs = false;
    const mode = { paused: false, delayMs: 0, jitterMs: 0 };
    for (const { input, scope } of this.#active.values()) {
      if (!matches(scope, subject)) continue;
      if (input.type === 'go-silent') silent = true;
      else if (input.type === 'stop-pongs') noPongs = true;
      else if (input.type === 'pause-deliveries') mode.paused = true;
      else if (
        input.type === 'delay-deliveries' &&
        input.delayMs + (input.jitterMs ?? 0) > mode.delayMs + mode.jitterMs
      ) {
        mode.delayMs = input.delayMs;
        mode.jitterMs = input.jitterMs ?? 0;
      }
    }
    const installed = connection.outlet instanceof FaultOutlet ? connection.outlet : undefined;
    const gated = mode.paused || mode.delayMs > 0 || mode.jitterMs > 0;
    if (!silent && !noPongs && !gated && (installed?.gate === undefined || installed.gate.idle)) {
      if (installed !== undefined) {
        connection.outlet = connection;
        connection.answerPings(true);
      }
      return;
    }
    const state = installed ?? new FaultOutlet(connection);
    connection.outlet = state;
    state.silent = silent;
    connection.answerPings(!noPongs && !silent);
    if (!gated && state.gate?.idle) state.gate = undefined;
    if (gated && state.gate === undefined) {
      state.openGate(this.#host.maxBufferedBytes, () => {
        if (connection.outlet === state && state.gate?.idle) this.#refresh(connection);
      });
    }
    state.gate?.set(mode);
  }

  /** The scope as listed (a key shown as its owner) and as matched (a key held as who it is). */
  async #resolveScope(scope: FaultScope): Promise<{ view: FaultScopeView; match: MatchScope }> {
    const { key, ...rest } = scope;
    if (key === undefined) return { view: rest, match: rest };
    const identity = await this.#host.authenticate(key);
    if (!identity) throw new ProtocolError('invalid-argument', 'scope.key is not a key of this service');
    return {
      view: { ...rest, keyOwner: identity.streamId ?? identity.userId },
      match: { ...rest, keyId: keyIdOf(identity) },
    };
  }

  #logFields(view: Fault): Record<string, string | number | undefined> {
    const fields: Record<string, string | number | undefined> = { fault: view.id, type: view.type, ...view.scope };
    for (const name of ['code', 'status', 'count', 'delayMs', 'jitterMs', 'durationMs'] as const) {
      const value = (view as Record<string, unknown>)[name];
      if (typeof value === 'number' || typeof value === 'string') fields[name] = value;
    }
    if (view.type === 'send-frame') fields['frameBytes'] = Buffer.byteLength(view.frame);
    return fields;
  }
}
