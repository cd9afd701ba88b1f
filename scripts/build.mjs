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
import { rolldown } from 'rolldown';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outdirAt = args.indexOf('--outdir');
const outdir = resolve(outdirAt === -1 ? join(root, 'dist') : args[outdirAt + 1]);

// Chunk names are content hashes: stale chunks from earlier builds would pile up.
await rm(outdir, { recursive: true, force: true });

// Rolldown, not esbuild, for the CLI and the library: esbuild cuts a chunk for every set of
// entry points and dynamic imports that share modules, which made `post --dry-run` load 30
// files (48 imports to resolve) where the runtime's per-file cost is most of its start-up.
// Here the command line's own core — commander, the post command, settings, the post's
// checks and everything they import — is one chunk: `--help` loads 5 files, `post --dry-run` 8.
/**
 * The command line reaches the library through its two entries (src/index.ts, the public one,
 * and src/api/internal.ts); in the bundle each name it imports comes straight from the module
 * that defines it. An entry names every module of the library, so a chunk that imported the
 * entry would take them all: `--help` would load the server.
 */
function libraryEntriesBypassed() {
  const origins = new Map();
  for (const entry of ['src/index.ts', 'src/api/internal.ts'].map((file) => join(root, file))) {
    const names = new Map();
    const text = readFileSync(entry, 'utf8');
    for (const [, list, spec] of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'([^']+)';/gm)) {
      for (const item of list.split(',').map((part) => part.trim().replace(/^type\s+/, ''))) {
        if (item === '') continue;
        const [imported, local = imported] = item.split(/\s+as\s+/);
        names.set(local, { imported, from: resolve(dirname(entry), spec.replace(/\.js$/, '.ts')) });
      }
    }
    origins.set(entry, names);
  }
  const namesOf = (list) =>
    list
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '' && !part.startsWith('type '));
  /** `{ a, b as c }` from an entry, as one import a module; undefined for anything else. */
  const direct = (list, spec, id, keyword) => {
    const names = origins.get(resolve(dirname(id), spec.replace(/\.js$/, '.ts')));
    if (names === undefined) return undefined;
    const byModule = new Map();
    for (const part of namesOf(list)) {
      const [name, local = name] = part.split(/\s+as\s+/);
      const origin = names.get(name);
      if (origin === undefined) throw new Error(`${id}: ${spec} has no export ${name}`);
      byModule.set(origin.from, [...(byModule.get(origin.from) ?? []), `${origin.imported}${keyword}${local}`]);
    }
    return byModule;
  };
  return {
    name: 'library-entries-bypassed',
    transform(code, id) {
      if (!/[\\/]src[\\/](cli|demo|terminal|doctor)[\\/]/.test(id)) return null;
      const statics = code.replace(/^import\s+\{([^}]*)\}\s+from\s+'([^']+)';/gm, (whole, list, spec) => {
        const byModule = direct(list, spec, id, ' as ');
        if (byModule === undefined) return whole;
        return [...byModule]
          .map(([from, names]) => `import { ${names.join(', ')} } from ${JSON.stringify(from)};`)
          .join('');
      });
      return statics.replace(/const\s*\{([^}]*)\}\s*=\s*await\s+import\('([^']+)'\)/g, (whole, list, spec) => {
        const byModule = direct(list, spec, id, ': ');
        if (byModule === undefined) return whole;
        if (byModule.size !== 1) throw new Error(`${id}: a lazy import from ${spec} must take names of one module`);
        const [[from, names]] = byModule;
        return `const { ${names.join(', ')} } = await import(${JSON.stringify(from)})`;
      });
    },
  };
}

const bundle = await rolldown({
  cwd: root,
  input: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  plugins: [libraryEntriesBypassed()],
  platform: 'node',
  // ws loads these native accelerators only when present; they are optional.
  external: ['bufferutil', 'utf-8-validate'],
  logLevel: 'warn',
  onLog(level, log, handle) {
    // Modules imported both statically and lazily stay where the static import puts them: expected.
    if (log.code !== 'INEFFECTIVE_DYNAMIC_IMPORT') handle(level, log);
  },
});
await bundle.write({
  dir: outdir,
  format: 'esm',
  // No source maps, names kept: stack traces stay readable without megabytes of maps.
  sourcemap: false,
  minify: { compress: true, mangle: false, codegen: { removeWhitespace: true } },
  comments: false,
  codeSplitting: {
    groups: [
      { name: 'core', test: /src[\\/]cli[\\/](commands[\\/]post|settings|post-content)\.ts$/ },
      // What both the command line's start-up (its flags) and the library read: one chunk, so
      // `--help` loads one file for it, not one per module.
      { name: 'shared', test: /src[\\/](api[\\/]serve-options|protocol[\\/](admin|state))\.ts$/ },
    ],
  },
});
await bundle.close();

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
