import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

it('the bin says to build when dist/ is missing (a fresh git checkout)', async () => {
  const checkout = await mkdtemp(join(tmpdir(), 'stream-posts-unbuilt-'));
  try {
    await cp(join(root, 'bin'), join(checkout, 'bin'), { recursive: true });
    const result = await promisify(execFile)(process.execPath, [join(checkout, 'bin/stream-posts.js'), '--help']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(result).toMatchObject({ code: 1, stderr: 'stream-posts: dist/ is missing: run npm run build\n' });
  } finally {
    await rm(checkout, { recursive: true, force: true });
  }
});
