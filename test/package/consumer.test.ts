import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// What a user does: install the packed tarball into a project of their own, far
// from this repository (no src/, no node_modules of ours), and use it from code.
const CONSUMER_TEST = `
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, startServer, StreamPostsError } from 'stream-posts';

let server;
before(async () => { server = await startServer({ port: 0 }); });
beforeEach(() => server.reset());
after(() => server.close());

test('subscribe, publish, release a hidden post by advancing the clock, reset', async () => {
  const reader = await connect({ url: server.url, apiKey: server.keys.readers.alice });
  const writer = await connect({ url: server.url, apiKey: server.keys.streams['macro-wire'] });
  const subscription = reader.subscribe({ streamIds: ['macro-wire'] });
  await subscription.ready;
  const events = subscription[Symbol.asyncIterator]();
  const releaseAt = Date.parse((await server.state()).now) + 3_600_000;
  const { post } = await writer.publish({ streamId: 'macro-wire', content: 'embargoed', releaseAt });
  assert.deepEqual((await events.next()).value, { type: 'created', history: false, format: 'post', post: { ...post, text: null } });
  await server.advanceClock(3_600_000);
  const released = (await events.next()).value;
  assert.equal(released.type, 'released');
  assert.equal(released.post.text, 'embargoed');
  const before = (await server.state()).posts;
  await server.reset();
  assert.ok((await server.state()).posts < before);
  await assert.rejects(writer.publish({ streamId: 'crypto-legal', content: 'x' }), (error) => error instanceof StreamPostsError && error.code === 'forbidden');
  await reader.close();
  await writer.close();
});
`;

const CONSUMER_TS = `
import { connect, startServer, StreamPostsError, type PostEvent, type StreamPostsErrorCode, type TreeEvent } from 'stream-posts';

export async function check(): Promise<void> {
  await using server = await startServer({ port: 0, seed: { users: [{ id: 'u', name: 'U', readerKey: 'reader-key-u' }] }, rateLimit: 0 });
  const url: string = server.url;
  const key: string | undefined = server.keys.readers['u'];
  const client = await connect({ url, apiKey: key ?? '', reconnect: false, timeoutMs: 5_000 });
  for await (const event of client.subscribe({ lastPosts: 5 })) {
    const post: PostEvent = event;
    const text: string | null = post.post.text;
    void text;
    break;
  }
  for await (const event of client.subscribe({ format: 'tree' })) {
    const item: TreeEvent = event;
    const title: string = item.item.title;
    void title;
  }
  const result = await client.publish({ streamId: 's', content: 'c', contentType: 'markdown', releaseAt: new Date() });
  const duplicate: boolean = result.duplicate;
  void duplicate;
  try {
    await client.close();
  } catch (error) {
    if (error instanceof StreamPostsError) {
      const code: StreamPostsErrorCode = error.code;
      void code;
    }
  }
  const state = await server.state();
  const n: number = state.scheduledReleases + (await server.advanceClock(1000)).clockOffsetMs;
  void n;
}
`;

// Resolution of every import a consumer makes, printed to stderr: which files loading the library pulls in.
const TRACE_LOADS = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.startsWith('file:')) process.stderr.write('LOAD ' + r.url + '\\\\n'); return r; }\`));
`;

let work: string;
let project: string;
/** What `npm pack --json` said of the tarball. */
let packed: { size: number; unpackedSize: number; entryCount: number };

/** Bytes as npm writes them (`npm pack`'s "package size: 1.3 MB"): powers of 1000, one decimal. */
function npmBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 999_950) return `${(bytes / 1000).toFixed(1)} kB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

async function sh(command: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run(command, args, { cwd, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'stream-posts-consumer-'));
  // Built apart from the repository's dist/, which other tests run the CLI from meanwhile;
  // the same build `prepack` runs, then packed as it is.
  const stage = join(work, 'stage');
  await mkdir(stage);
  for (const entry of ['package.json', 'README.md', 'LICENSE', 'bin', 'docs'])
    await cp(join(root, entry), join(stage, entry), { recursive: true });
  await sh(process.execPath, [join(root, 'scripts/build.mjs'), '--types', '--outdir', join(stage, 'dist')], root);
  const { stdout } = await sh(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage);
  packed = (JSON.parse(stdout) as (typeof packed)[])[0]!;
  const tarball = (await readdir(work)).find((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack made no tarball');

  project = join(work, 'project');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // Offline, with an empty cache: the tarball must need nothing from the registry.
  await sh(
    npm,
    [
      'install',
      '--offline',
      '--cache',
      join(work, 'npm-cache'),
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      join(work, tarball),
    ],
    project,
  );
}, 120_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the packed package, installed in a project of its own', () => {
  it('is as large as docs/api.md says (the figures of npm pack --json)', async () => {
    const { readFile } = await import('node:fs/promises');
    const api = await readFile(join(root, 'docs/api.md'), 'utf8');
    expect(api).toContain(`| tarball | ${npmBytes(packed.size)} | \`npm pack --json\` (\`size\`) |`);
    expect(api).toContain(
      `| unpacked | ${npmBytes(packed.unpackedSize)}, ${packed.entryCount} files | \`npm pack --json\` (\`unpackedSize\`, \`entryCount\`) |`,
    );
  });

  it('depends on nothing: one package installed', async () => {
    const installed = await readdir(join(project, 'node_modules'));
    expect(installed.filter((name) => !name.startsWith('.'))).toEqual(['stream-posts']);
  });

  it('runs a node:test suite that starts a server, subscribes, publishes, advances the clock and resets', async () => {
    await writeFile(join(project, 'consumer.test.mjs'), CONSUMER_TEST);
    const { stdout } = await sh(process.execPath, ['--test', 'consumer.test.mjs'], project);
    expect(stdout).toMatch(/# pass 1/);
    expect(stdout).toMatch(/# fail 0/);
  }, 60_000);

  it('type-checks a TypeScript consumer against the published types', async () => {
    await writeFile(join(project, 'consumer.ts'), CONSUMER_TS);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023', 'ESNext.Disposable'],
          strict: true,
          noEmit: true,
          // Node's own types only, from our devDependencies: the package itself must bring everything else.
          typeRoots: [join(root, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const result = await sh(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'],
      project,
    ).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  }, 60_000);

  it('loads no CLI code on import, and works from require()', async () => {
    await writeFile(join(project, 'trace-loads.mjs'), TRACE_LOADS);
    const { stderr } = await sh(
      process.execPath,
      ['--import', './trace-loads.mjs', '--input-type=module', '-e', "await import('stream-posts')"],
      project,
    );
    const loaded = [...stderr.matchAll(/LOAD file:\/\/(\S+)/g)]
      .map((match) => match[1]!)
      .filter((path) => path.includes('/node_modules/stream-posts/'));
    expect(loaded.length).toBeGreaterThan(0);
    const names = loaded.map((path) => path.slice(path.lastIndexOf('/') + 1));
    expect(
      names.filter((name) => /^(cli|ora|marked|marked-terminal|prompts|listen|post|serve|demo)[-.]/.test(name)),
    ).toEqual([]);
    const { readFile } = await import('node:fs/promises');
    for (const path of new Set(loaded)) {
      const text = await readFile(path, 'utf8');
      // commander, chalk and inquirer, by names their bundled code keeps.
      for (const marker of ['class _Command', 'createChalk', 'createPrompt'])
        expect(text.includes(marker), `${path} has ${marker}`).toBe(false);
    }
    const { stdout } = await sh(
      process.execPath,
      ['-e', "const api = require('stream-posts'); console.log(typeof api.startServer, typeof api.connect)"],
      project,
    );
    expect(stdout.trim()).toBe('function function');
  }, 60_000);
});
