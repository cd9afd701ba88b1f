// Bundles the CLI and the library into dist/ so `npx stream-posts` loads a few
// files instead of resolving hundreds of modules; heavy, rarely needed modules
// stay separate chunks. `--types` also writes the library's declarations
// (slow: only packing needs them). `--outdir DIR` builds elsewhere, so a test
// can pack while other tests run the CLI from dist/.
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outdirAt = args.indexOf('--outdir');
const outdir = resolve(outdirAt === -1 ? join(root, 'dist') : args[outdirAt + 1]);

// Chunk names are content hashes: stale chunks from earlier builds would pile up.
await rm(outdir, { recursive: true, force: true });

await build({
  absWorkingDir: root,
  entryPoints: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // No source maps: names are kept (below), so stack traces stay readable without 5 MB of maps.
  sourcemap: false,
  legalComments: 'none',
  // ws loads these native accelerators only when present; they are optional.
  external: ['bufferutil', 'utf-8-validate'],
  // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __spCreateRequire } from 'node:module'; const require = __spCreateRequire(import.meta.url);",
  },
  // Comments and whitespace out, names kept (stack traces stay readable): less to parse at start-up.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});

// The dashboard `serve` shows at `/`: one script and one style sheet for the browser, served
// from dist/dashboard/ under a Content-Security-Policy that allows nothing inline.
await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'src/dashboard/main.ts', out: 'app' },
    { in: 'src/dashboard/app.css', out: 'app' },
  ],
  outdir: join(outdir, 'dashboard'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome111', 'firefox111', 'safari16.4'],
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(root, 'src/dashboard/index.html'), join(outdir, 'dashboard/index.html'));

if (args.includes('--types')) {
  const typesDir = join(outdir, 'types');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--declarationDir', typesDir], {
    stdio: 'inherit',
  });
  // tsc declares every module the entry reaches; users get only those its types
  // reach, so none of them names the bundled libraries' types (ws, zod).
  const wanted = new Set();
  const visit = (file) => {
    if (wanted.has(file)) return;
    wanted.add(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/from '(\.[^']+)\.js'/g))
      visit(join(dirname(file), `${spec}.d.ts`));
  };
  visit(join(typesDir, 'index.d.ts'));
  for (const file of readdirSync(typesDir, { recursive: true, encoding: 'utf8' })) {
    if (file.endsWith('.d.ts') && !wanted.has(join(typesDir, file))) rmSync(join(typesDir, file));
  }
}
