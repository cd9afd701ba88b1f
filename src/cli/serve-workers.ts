import cluster, { type Worker } from 'node:cluster';
import { prepareRedisStore, storeErrorCode } from '../api/internal.js';
import type { Seed } from '../protocol/seed.js';
import { EXIT, ExitError } from './exit.js';
import { StopSignals, type ExecChild } from './serve-signals.js';
import { PeerRouter } from './worker-peers.js';

/**
 * A Redis store that cannot be used: an evicting one is the setup's fault (exit 2), else the
 * store's (1). Undefined for any other error.
 */
export function storeExit(error: unknown): ExitError | undefined {
  const code = storeErrorCode(error);
  if (code === undefined) return undefined;
  const message = (error as Error).message;
  return new ExitError(code === 'store-evicts' ? EXIT.usage : EXIT.failed, message, { cause: error });
}

/** Where the workers listen, as each reports it to the primary. */
export interface ServedAt {
  url: string;
  httpUrl: string;
  adminEnabled: boolean;
}

export interface WorkerReport extends ServedAt {
  type: 'listening';
}

export interface PrimaryPlan {
  workers: number;
  seed: Seed;
  redis: { url: string; prefix?: string; resetStore?: boolean; allowEviction?: boolean };
  idempotencyWindowMs: number;
  exec: string | undefined;
  /** Prints the start-up output once, for the whole service. */
  announce(at: ServedAt): void;
  runExec(command: string, at: ServedAt): ExecChild;
}

/** A worker tells the primary it is listening; the primary then speaks for all of them. */
export function reportListening(at: ServedAt): void {
  const report: WorkerReport = { type: 'listening', url: at.url, httpUrl: at.httpUrl, adminEnabled: at.adminEnabled };
  process.send?.(report);
}

function isReport(message: unknown): message is WorkerReport {
  return typeof message === 'object' && message !== null && (message as WorkerReport).type === 'listening';
}

/**
 * Loads the seed (or replaces the keyspace's, with --reset-store) once, before any worker
 * starts: workers that each reset the keyspace could wipe posts another one had taken.
 */
async function prepareStore(plan: PrimaryPlan): Promise<void> {
  try {
    await prepareRedisStore({ ...plan.redis, seed: plan.seed, idempotencyWindowMs: plan.idempotencyWindowMs });
  } catch (error) {
    throw storeExit(error) ?? error;
  }
}

/**
 * How long to wait before replacing a worker: at once after one that ran a while, then
 * doubling (250 ms up to 10 s) while replacements keep dying young, so a worker that
 * crashes at start-up (Redis refusing it, say) does not fork in a tight loop.
 */
export class RespawnBackoff {
  static readonly youngMs = 10_000;
  static readonly firstMs = 250;
  static readonly maxMs = 10_000;
  #youngDeaths = 0;

  delayAfter(livedMs: number): number {
    if (livedMs >= RespawnBackoff.youngMs) {
      this.#youngDeaths = 0;
      return 0;
    }
    this.#youngDeaths += 1;
    if (this.#youngDeaths === 1) return 0;
    return Math.min(RespawnBackoff.firstMs * 2 ** (this.#youngDeaths - 2), RespawnBackoff.maxMs);
  }
}

/**
 * `serve --workers N`: N worker processes share the port (node:cluster) and the Redis
 * store; this process only starts, watches and stops them, and prints what one `serve`
 * would. A worker that dies is replaced; a worker that cannot start stops the whole.
 */
export async function servePrimary(plan: PrimaryPlan): Promise<number> {
  await prepareStore(plan);
  const signals = new StopSignals();
  // Once the work is done (or a signal came), a worker exiting is not replaced.
  let stopping = false;
  const live = new Set<Worker>();
  let started = false;
  let failStart: (error: Error) => void = () => {};
  const respawn = new RespawnBackoff();
  const respawnTimers = new Set<NodeJS.Timeout>();
  const router = new PeerRouter();
  const fork = (): Promise<ServedAt> => {
    const worker = cluster.fork();
    const startedAt = Date.now();
    live.add(worker);
    // A worker killed while the primary writes to it (EPIPE, ERR_IPC_CHANNEL_CLOSED) or
    // signals it: its `exit` follows and replaces it; unheard, the error would end the primary.
    worker.on('error', () => {});
    // Its channel closes before it exits: nothing more is put to it from then on.
    worker.once('disconnect', () => router.gone(worker));
    return new Promise((resolve) => {
      worker.on('message', (message: unknown) => {
        if (router.message(worker, message)) return;
        if (!isReport(message)) return;
        router.listening(worker);
        resolve(message);
      });
      worker.once('exit', (code, signal) => {
        live.delete(worker);
        router.gone(worker);
        if (stopping || signals.requested) return;
        if (!started) {
          failStart(
            new ExitError(EXIT.failed, `a worker stopped before it was listening (${signal ?? `exit code ${code}`})`),
          );
          return;
        }
        const delayMs = respawn.delayAfter(Date.now() - startedAt);
        process.stderr.write(
          `stream-posts: worker ${worker.process.pid} stopped (${signal ?? `exit code ${code}`}); starting another${delayMs > 0 ? ` in ${delayMs} ms` : ''}\n`,
        );
        const timer = setTimeout(() => {
          respawnTimers.delete(timer);
          if (!stopping && !signals.requested) void fork();
        }, delayMs);
        respawnTimers.add(timer);
      });
    });
  };
  const stopWorkers = async () => {
    stopping = true;
    for (const timer of respawnTimers) clearTimeout(timer);
    await Promise.all(
      [...live].map(
        (worker) =>
          new Promise<void>((resolve) => {
            worker.once('exit', () => resolve());
            worker.process.kill('SIGTERM');
          }),
      ),
    );
  };

  let at: ServedAt;
  try {
    const startFailed = new Promise<never>((_resolve, reject) => {
      failStart = reject;
    });
    const all = await Promise.race([Promise.all(Array.from({ length: plan.workers }, fork)), startFailed]);
    at = all[0]!;
    started = true;
  } catch (error) {
    await stopWorkers();
    throw error;
  }
  plan.announce(at);

  const exec = plan.exec;
  const exitCode = await signals.wait(exec === undefined ? undefined : () => plan.runExec(exec, at));
  await stopWorkers();
  return exitCode;
}
