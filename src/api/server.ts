// The library's server handle: what startServer resolves to, with its documented methods; the
// options and their checks are in start-options.ts, the work in src/server/.
import type { AdminState, ConnectionInfo, Fault, FaultInput, KeepAliveRound } from '../protocol/admin.js';
import { ProtocolError } from '../protocol/errors.js';
import type { Seed } from '../protocol/seed.js';
import {
  startServer as startCore,
  type ServerOptions as CoreOptions,
  type CoreServer as Core,
} from '../server/assemble.js';
import { StateFileError } from '../server/admin/state-file.js';
import { StateLockError } from '../server/admin/state-lock.js';
import type { StateDocument } from '../protocol/state.js';
import type { ReplayReport } from '../server/replay/replay.js';
import type { PlayOptions, ScenarioPlayer } from '../server/admin/scenario-player.js';
export type { PlayOptions, ScenarioStart } from '../server/admin/scenario-player.js';
import { loadScenario, stepResult, type ScenarioPlayback, type ScenarioStepResult } from './scenario.js';
import { StreamPostsError } from './errors.js';
import { coreOptions, type StartServerOptions } from './start-options.js';
import { startRecording, wantsRecording, type RecordingServer } from './record-server.js';

export type { SeedInput, StartServerOptions } from './start-options.js';
export type { RecordingServer, ProxiedFrame } from './record-server.js';
export type { Logger, LogLevel, LogFields } from '../server/logger.js';
export type { StateDocument } from '../protocol/state.js';
export type { ReplayReport } from '../server/replay/replay.js';
export type { Recording } from '../protocol/recording.js';
export type { ScenarioPlayback, ScenarioStepResult, ScenarioSummary, ScenarioConversion } from './scenario.js';
/** What `state()` reports (the same as `GET /_admin/state`). */
export type ServerState = AdminState;
export type {
  ConnectionInfo,
  Fault,
  FaultInput,
  FaultScope,
  FaultScopeView,
  KeepAliveRound,
} from '../protocol/admin.js';

/** Injected faults (the same as `/_admin/faults`): this server's own, also with a Redis store. */
export interface ServerFaults {
  /**
   * Injects a fault; resolves to it as the server holds it, with its `id` (a one-shot
   * `close` or `send-frame` has acted before this resolves, and says on how many connections
   * in `applied`). A bad fault throws TypeError naming the field.
   */
  add(fault: FaultInput): Promise<Fault>;
  /** The faults in force. */
  list(): Fault[];
  /** Clears one fault, or every one without an id; returns how many were cleared (0: no fault with that id). */
  clear(id?: string): number;
}

/** The seed's keys: `readers[userId]` and `streams[streamId]`. */
export interface ServerKeys {
  readers: Readonly<Record<string, string>>;
  streams: Readonly<Record<string, string>>;
}

// Ten years, as the admin endpoint allows.
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

/** The core's start, with a state file that cannot be used as the library's `invalid-state` error, or one in use as `state-locked`. */
async function startCoreWithState(options: CoreOptions): Promise<Core> {
  try {
    return await startCore(options);
  } catch (error) {
    if (error instanceof StateFileError) throw new StreamPostsError('invalid-state', error.message, { cause: error });
    if (error instanceof StateLockError) throw new StreamPostsError('state-locked', error.message, { cause: error });
    throw error;
  }
}

/** The embedded service, started by `startServer`. */
export class StreamPostsServer {
  readonly #core: Core;
  readonly #keys: ServerKeys;
  readonly faults: ServerFaults;
  readonly #seed: Seed;
  #player: ScenarioPlayer | undefined;

  /** @internal */
  constructor(core: Core, seed: Seed) {
    this.#core = core;
    const admin = core.admin;
    this.faults = Object.freeze({
      async add(fault: FaultInput): Promise<Fault> {
        try {
          return await admin.addFault(fault);
        } catch (error) {
          if (error instanceof ProtocolError) throw new TypeError(`faults.add: ${error.message}`);
          throw error;
        }
      },
      list: () => admin.faults(),
      clear(id?: string): number {
        if (id !== undefined && typeof id !== 'string') throw new TypeError('faults.clear: id must be a string');
        return admin.clearFaults(id);
      },
    });
    this.#seed = seed;
    this.#keys = Object.freeze({
      readers: Object.freeze(Object.fromEntries(seed.users.map((user) => [user.id, user.readerKey]))),
      streams: Object.freeze(Object.fromEntries(seed.streams.map((stream) => [stream.id, stream.key]))),
    });
  }

  /** `ws://host:port` (`wss://` with tls): give it to `connect({ url })`. */
  get url(): string {
    return this.#core.url;
  }

  /** `http://host:port` (`https://` with tls): the REST origin. */
  get httpUrl(): string {
    return this.#core.httpUrl;
  }

  /** `http://host:port/_admin`, or undefined when the HTTP admin endpoints are off. */
  get adminUrl(): string | undefined {
    return this.#core.adminEnabled ? `${this.#core.httpUrl}/_admin` : undefined;
  }

  get port(): number {
    return this.#core.port;
  }

  /** Keys of the seed's readers and streams. A getter, so that printing the server prints no keys. */
  get keys(): ServerKeys {
    return this.#keys;
  }

  /**
   * Moves the service's clock forward. Before the promise resolves, every
   * release now due has been sent to subscribers and idempotency keys older
   * than the window have expired.
   */
  async advanceClock(ms: number): Promise<{ now: string; clockOffsetMs: number }> {
    if (typeof ms !== 'number') throw new TypeError(`advanceClock: ms must be a number, got ${typeof ms}`);
    if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_ADVANCE_MS) {
      throw new RangeError(`advanceClock: ms must be an integer from 0 to ${MAX_ADVANCE_MS}, got ${ms}`);
    }
    return this.#core.admin.advanceClock(ms);
  }

  /** Back to the seed: posts, scheduled releases and idempotency keys are dropped; connections and subscriptions stay. */
  reset(): Promise<void> {
    return this.#core.admin.reset();
  }

  state(): Promise<ServerState> {
    return this.#core.admin.state();
  }

  /**
   * One keep-alive round now (the same as `POST /_admin/keep-alive`), as if the interval had
   * passed: a connection that left the last round's ping unanswered is terminated, every
   * other one gets a ping and a `keep-alive` event. Resolves, once the round has reached
   * every connection, to how many were pinged and terminated. The next timed round comes a
   * whole `keepAliveMs` later. So a test of a client's keep-alive needs no waiting: start
   * with a long `keepAliveMs` and drive the rounds.
   */
  keepAliveRound(): Promise<KeepAliveRound> {
    return this.#core.admin.keepAliveRound();
  }

  /** The open WebSocket connections (the same as `GET /_admin/connections`): who, subscribed to what. */
  connections(): ConnectionInfo[] {
    return this.#core.admin.connections();
  }

  /**
   * The memory store's state as `GET /_admin/export` answers it (and a state file holds it):
   * posts, pending releases, idempotency keys as digests, the clock offset; never a key.
   */
  async exportState(): Promise<StateDocument> {
    return (await this.#core.admin.exportState()) as StateDocument;
  }

  /**
   * Plays a scenario (docs/state-and-scenarios.md): an array of steps, or the path of a JSON or
   * NDJSON scenario file. Every step is checked first: a bad one rejects with
   * `invalid-scenario` naming the step (or line) and field, and nothing plays. `speed` runs it
   * faster than real time; `stepped: true` runs nothing until `step()`.
   */
  async play(scenario: readonly object[] | string, options: PlayOptions = {}): Promise<ScenarioPlayback> {
    const parsed = await loadScenario(scenario, this.#seed, this.#core.scenarioFaults);
    const player = this.#core.play(parsed, options);
    this.#player = player;
    return { steps: parsed.steps.length, done: player.done, stop: () => player.stop() };
  }

  /** Runs the next step of the scenario played with `stepped: true`; resolves to undefined when none is left. */
  async step(): Promise<ScenarioStepResult | undefined> {
    if (!this.#player?.stepped) throw new TypeError('step() needs a scenario played with { stepped: true }');
    const outcome = await this.#player.step();
    return outcome === undefined ? undefined : stepResult(outcome);
  }

  /**
   * With `replay`: what of the recording was used so far (recorded connections and requests no
   * live one matched, client frames never reached, how many live ones matched nothing);
   * undefined without a recording.
   */
  replayReport(): ReplayReport | undefined {
    return this.#core.replayReport();
  }

  /** Open WebSocket connections now; unlike `state()` it needs no store, so it also answers while closing. */
  get connectionCount(): number {
    return this.#core.connectionCount;
  }

  /** Stops accepting, closes every connection with 1001, and resolves when all is released. Idempotent. */
  close(): Promise<void> {
    return this.#core.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Starts the service in this process; resolves once the port is bound.
 * Bad options throw TypeError/RangeError naming the option; a bad seed
 * rejects with StreamPostsError `invalid-seed` whose `path` names the field;
 * a port in use rejects with Node's own error (`code` EADDRINUSE).
 * With `record` (and `upstream`) it starts a recording proxy instead (docs/record-replay.md).
 */
export function startServer(options: StartServerOptions & { record: string }): Promise<RecordingServer>;
export function startServer(options?: StartServerOptions): Promise<StreamPostsServer>;
export async function startServer(options: StartServerOptions = {}): Promise<StreamPostsServer | RecordingServer> {
  if (options !== null && typeof options === 'object' && wantsRecording(options as Record<string, unknown>))
    return startRecording(options);
  return startInstance(options, undefined);
}

/**
 * startServer for one of several instances acting as one service (`serve --workers`): its
 * name prefixes its connection ids, and its admin endpoints reach the others through the link.
 * Not part of the package's API: the CLI reaches it through internal.ts (and `@internal` keeps
 * it out of the package's types).
 * @internal
 */
export async function startInstance(
  options: StartServerOptions,
  instance: CoreOptions['instance'],
): Promise<StreamPostsServer> {
  const checked = await coreOptions(options, instance);
  return new StreamPostsServer(await startCoreWithState(checked), checked.seed);
}
