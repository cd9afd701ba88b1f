#!/usr/bin/env node
// A git checkout has no dist/ until it is built: say so instead of a module-not-found trace.
import { existsSync } from 'node:fs';
if (existsSync(new URL('../dist/cli.js', import.meta.url))) {
  await import('../dist/cli.js');
} else {
  process.stderr.write('stream-posts: dist/ is missing: run npm run build\n');
  process.exitCode = 1;
}
