// One writer per state file (PROTOCOL.md B8): two processes saving one file in turn each
// overwrite the other's posts, and a key acknowledged by one is published again by the other.
// The lock is a file beside it holding its holder's PID and host: a holder that is gone (a
// `kill -9`, a power cut) leaves it behind, and whoever finds its PID dead takes it over.
import { hostname } from 'node:os';
import { link, open, readFile, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** The state file is in use by another live process; `pid` (and `host`) name it. */
export class StateLockError extends Error {
  readonly code = 'state-locked';

  constructor(
    readonly file: string,
    readonly pid: number,
    readonly host: string,
  ) {
    const holder = host === hostname() ? `process ${pid}` : `process ${pid} on host ${host}`;
    super(
      `state file ${file} is in use by ${holder} (lock ${lockPathOf(file)}); stop it or name another state file (if no such process runs, remove the lock)`,
    );
    this.name = new.target.name;
  }
}

export function lockPathOf(file: string): string {
  return `${file}.lock`;
}

interface Holder {
  pid: number;
  host: string;
}

function parseHolder(text: string): Holder | undefined {
  const [pid, host] = text.split('\n');
  const number = Number(pid);
  return Number.isInteger(number) && number > 0 && host !== undefined && host !== ''
    ? { pid: number, host }
    : undefined;
}

async function readHolder(path: string): Promise<Holder | undefined | 'gone'> {
  try {
    return parseHolder(await readFile(path, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
}

/** Whether a process of this host runs as `pid`; one of another host cannot be asked, so it counts as alive. */
function alive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
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

  /** Takes the lock of `file`, or throws StateLockError naming the live process that holds it. */
  static async acquire(file: string): Promise<StateLock> {
    const path = lockPathOf(file);
    const mine = `${process.pid}\n${hostname()}\n`;
    // A few rounds: each either takes the lock, finds a live holder, or clears a dead one.
    for (let round = 0; round < 5; round += 1) {
      if (await createWhole(path, mine)) return new StateLock(path, file);
      const holder = await readHolder(path);
      if (holder === 'gone') continue;
      if (holder !== undefined && alive(holder)) throw new StateLockError(file, holder.pid, holder.host);
      await removeStale(path, holder);
    }
    const holder = await readHolder(path);
    throw new StateLockError(file, holder === 'gone' || holder === undefined ? 0 : holder.pid, hostname());
  }

  /** Removes the lock, if it is still this process's. */
  async release(): Promise<void> {
    const holder = await readHolder(this.path).catch(() => undefined);
    if (holder === 'gone' || holder?.pid !== process.pid || holder.host !== hostname()) return;
    await unlink(this.path).catch(() => {});
  }
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
