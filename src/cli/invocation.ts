import { basename, delimiter, dirname, isAbsolute, relative, resolve } from 'node:path';

const PLAIN_WORD = /^[\w@%+=:,./-]+$/;

function shellWord(word: string): string {
  return PLAIN_WORD.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The words that run this CLI the way the user ran it, for hints such as "in another
 * terminal, run …": `npx stream-posts` only under npx (npm exec marks its scripts with
 * `npm_lifecycle_event=npx`, and installs into an `_npx` cache), `stream-posts` when the
 * command was found on PATH, and `node <script>` otherwise (a clone, `npm start`).
 */
export function invokedAs(script: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  if (env['npm_lifecycle_event'] === 'npx' || (script !== undefined && /[\\/]_npx[\\/]/.test(script)))
    return 'npx stream-posts';
  if (script === undefined) return 'stream-posts';
  const onPath = (env['PATH'] ?? '')
    .split(delimiter)
    .filter((directory) => directory !== '')
    .some((directory) => resolve(cwd, directory) === dirname(resolve(cwd, script)));
  if (onPath) return basename(script);
  const path = isAbsolute(script) ? relative(cwd, script) : script;
  return `node ${shellWord(path.startsWith('..') ? resolve(cwd, script) : path)}`;
}
