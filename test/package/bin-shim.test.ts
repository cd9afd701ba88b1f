import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { ensureBuilt } from '../support/cli.js';

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

it("the README's install from a clone puts stream-posts on PATH, and npx finds it inside the clone", async () => {
  ensureBuilt();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const run = promisify(execFile);
  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(await readFile(join(root, 'README.md'), 'utf8')).toContain('npm install -g .');
  const prefix = await mkdtemp(join(tmpdir(), 'stream-posts-global-'));
  try {
    // `npm install -g .` in the clone, into a prefix of its own: a link, nothing fetched.
    await run(npm, ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', '.'], { cwd: root });
    const installed = await run(join(prefix, 'bin', 'stream-posts'), ['--version']);
    expect(installed.stdout.trim()).toBe(version);
    const npx = await run(npm, ['exec', '--offline', '--no', '--', 'stream-posts', '--version'], { cwd: root });
    expect(npx.stdout.trim()).toBe(version);
  } finally {
    await rm(prefix, { recursive: true, force: true });
  }
}, 60_000);
