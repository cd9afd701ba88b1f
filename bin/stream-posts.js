#!/usr/bin/env node
// A git checkout has no dist/ until it is built: say so instead of a module-not-found trace.
// (No `node:fs` check first: importing it as an ES module costs start-up time.)
const cli = new URL('../dist/cli.js', import.meta.url);
try {
  await import(cli.href);
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes(cli.pathname)) throw error;
  process.stderr.write('stream-posts: dist/ is missing: run npm run build\n');
  process.exitCode = 1;
}
