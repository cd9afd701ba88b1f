// One writer per state file (PROTOCOL.md B8): two processes saving one file in turn each
// overwrite the other's posts, and a key acknowledged by one is published again by the other.
// The lock is a file beside it holding its holder's PID, host and start time: a holder that
// is gone (a `kill -9`, a power cut) leaves it behind, and whoever finds it gone takes it over.
// A PID alone does not say the holder is gone: a container restarted gives `serve` the PID
// its last run had, and a busy host gives a dead holder's PID to another process.
import { hostname } from 'node:os';
import { link, open, readFile, readdir, readlink, realpath, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

/** The state file is in use by another live process; `pid` (and `host`) name it. */
export class StateLockError extends Error {
  readonly code = 'state-locked';

  constructor(
    readonly file: string,
    readonly pid: number,
    readonly host: string,
    lock = lockPathOf(file),
  ) {
    const holder = host === hostname() ? `process ${pid}` : `process ${pid} on host ${host}`;
    super(
      `state file ${file} is in use by ${holder} (lock ${lock}); stop it or name another state file (if no such process runs, remove the lock)`,
    );
    this.name = new.target.name;
  }
}

export function lockPathOf(file: string): string {
  return `${file}.lock`;
}

/**
 * Where `file` really is: its links followed, even to a file not written yet, so that two
 * names of one file are one lock and a save replaces the file, never the link to it.
 */
export async function realPathOf(file: string, hops = 0): Promise<string> {
  try {
    return await realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  // As the kernel does, a chain of links ends after 40.
  const target = hops < 40 ? await readlink(file).catch(() => undefined) : undefined;
  if (target !== undefined) return realPathOf(resolve(dirname(file), target), hops + 1);
  return join(await realpath(dirname(file)), basename(file));
}

interface Holder {
  pid: number;
  host: string;
  /** When the holder started (`/proc/PID/stat` field 22); absent where there is no /proc, or in a lock of an older release. */
  startedAt?: string;
}

/** When process `pid` started, in clock ticks since boot; undefined where /proc cannot say (not Linux, or no such process). */
async function startTimeOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // The command name (field 2) may hold spaces and parentheses: count the fields after its last ')'.
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  const startedAt = fields?.[22 - 3];
  return startedAt !== undefined && /^\d+$/.test(startedAt) ? startedAt : undefined;
}

function parseHolder(text: string): Holder | undefined {
  const [pid, host, startedAt] = text.split('\n');
  const number = Number(pid);
  if (!Number.isInteger(number) || number <= 0 || host === undefined || host === '') return undefined;
  return { pid: number, host, ...(startedAt ? { startedAt } : {}) };
}

async function readHolder(path: string): Promise<Holder | undefined | 'gone'> {
  try {
    return parseHolder(await readFile(path, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
}

/** The locks this process holds: a lock naming this process is its own only when it is among them. */
const heldHere = new Set<string>();

/**
 * Whether the process that wrote the lock still runs: one of another host cannot be asked, so
 * it counts as alive; this process holds only the locks it took in this run; another PID
 * must run and, where the lock and /proc say when it started, have started then.
 */
async function alive(holder: Holder, path: string): Promise<boolean> {
  if (holder.host !== hostname()) return true;
  if (holder.pid === process.pid) return heldHere.has(path);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (holder.startedAt === undefined) return true;
  const startedAt = await startTimeOf(holder.pid);
  return startedAt === undefined || startedAt === holder.startedAt;
}

/** Writes `text` to `path` only if nothing is there: a complete file appears at once, or nothing does. */
async function createWhole(path: string, text: string): Promise<boolean> {
  const temp = `${path}.${process.pid}.new`;
  const handle = await open(temp, 'w', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
  } finally {
    await handle.close();
  }
  try {
    await link(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

/**
 * Moves a dead holder's lock out of the way. Two processes may find the same dead lock; the
 * rename lets only one of them move it, and one that moved a live lock instead (taken over
 * meanwhile by the other) puts it back.
 */
async function removeStale(path: string, stale: Holder | undefined): Promise<void> {
  const aside = `${path}.${process.pid}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await readHolder(aside);
  const same = moved !== 'gone' && moved?.pid === stale?.pid && moved?.host === stale?.host;
  if (!same) await link(aside, path).catch(() => {});
  await unlink(aside).catch(() => {});
}

/** A held lock on one state file, until `release`. */
export class StateLock {
  private constructor(
    readonly path: string,
    readonly file: string,
  ) {}

  /**
   * Takes the lock of `file` (its real path: see realPathOf), or throws StateLockError naming
   * the live process that holds it; `named` is the file as the caller named it, for the error.
   */
  static async acquire(file: string, named = file): Promise<StateLock> {
    const path = lockPathOf(file);
    const mine = `${process.pid}\n${hostname()}\n${(await startTimeOf(process.pid)) ?? ''}\n`;
    // A few rounds: each either takes the lock, finds a live holder, or clears a dead one.
    for (let round = 0; round < 5; round += 1) {
      if (await createWhole(path, mine)) {
        heldHere.add(path);
        return new StateLock(path, file);
      }
      const holder = await readHolder(path);
      if (holder === 'gone') continue;
      if (holder !== undefined && (await alive(holder, path)))
        throw new StateLockError(named, holder.pid, holder.host, path);
      await removeStale(path, holder);
    }
    const holder = await readHolder(path);
    throw new StateLockError(named, holder === 'gone' || holder === undefined ? 0 : holder.pid, hostname(), path);
  }

  /** Removes the lock, if it is still this process's. */
  async release(): Promise<void> {
    if (!heldHere.delete(this.path)) return;
    const holder = await readHolder(this.path).catch(() => undefined);
    if (holder === 'gone' || holder?.pid !== process.pid || holder.host !== hostname()) return;
    await unlink(this.path).catch(() => {});
  }
}

/** Writes a file so that a crash leaves either the old or the new contents: temp file, fsync, rename. */
export async function writeAtomically(file: string, data: string | Buffer): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  const handle = await open(temp, 'w', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  await rename(temp, file);
  // The rename itself is durable once the directory is synced; not every file system allows it.
  const directory = await open(dirname(file), 'r').catch(() => undefined);
  await directory?.sync().catch(() => {});
  await directory?.close();
}

/**
 * Removes the temporary files of writes a killed process left behind (`.NAME.PID.tmp`, see
 * state-file.ts); called by the lock's holder, so no live writer's file is among them.
 */
export async function removeInterruptedWrites(file: string): Promise<string[]> {
  const directory = dirname(file);
  const prefix = `.${basename(file)}.`;
  const names = await readdir(directory).catch(() => [] as string[]);
  const leftovers = names.filter((name) => name.startsWith(prefix) && /^\d+\.tmp$/.test(name.slice(prefix.length)));
  await Promise.all(leftovers.map((name) => unlink(join(directory, name)).catch(() => {})));
  return leftovers;
}
