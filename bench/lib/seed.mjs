/** Seed files for `stream-posts serve --seed` (and the bare servers that read them). */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Writes `seed` as JSON to seed.json in a new temp folder named after the
 * benchmark; resolves to `{ path, remove }`, `remove()` deleting the folder.
 */
export async function writeSeed(benchmark, seed) {
  const dir = await mkdtemp(join(tmpdir(), `stream-posts-bench-${benchmark}-`));
  const remove = () => rm(dir, { recursive: true, force: true });
  const path = join(dir, 'seed.json');
  try {
    await writeFile(path, JSON.stringify(seed));
  } catch (error) {
    await remove();
    throw error;
  }
  return { path, remove };
}
