// Bundles the CLI into dist/ so `npx stream-posts` loads one file instead of
// resolving hundreds of modules; heavy, rarely needed modules stay separate chunks.
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

// Chunk names are content hashes: stale chunks from earlier builds would pile up.
await rm('dist', { recursive: true, force: true });

await build({
  entryPoints: { cli: 'src/cli/main.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  legalComments: 'none',
  // ws loads these native accelerators only when present; they are optional.
  external: ['bufferutil', 'utf-8-validate'],
  // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
  banner: { js: "import { createRequire as __spCreateRequire } from 'node:module'; const require = __spCreateRequire(import.meta.url);" },
  // Comments and whitespace out, names kept (stack traces stay readable): less to parse at start-up.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
