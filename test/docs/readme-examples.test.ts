import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliCommandLine, ROOT, shell } from '../support/cli.js';
import { startServe } from '../support/serve.js';

/**
 * The README's command table, run as a reader pastes it: against a fresh `serve` (its demo
 * seed), with the README's `export STREAM_POSTS_API_KEY=…` before it. Each example must show
 * something; one that prints nothing on the demo seed teaches nothing.
 */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const EXPORTED_KEY = /export STREAM_POSTS_API_KEY=(\S+)/.exec(README)?.[1];
const EXAMPLES = [...README.matchAll(/^\| `(\w+)`:[^|]*\| `((?:[A-Z_]+=\S+ )?stream-posts [^`]+)` \|$/gm)].map(
  ([, name, line]) => ({ name: name!, line: line! }),
);
/** Examples that take over the terminal, run a service of their own, or change the reader's config. */
const NOT_RUN = new Set(['serve', 'terminal', 'demo', 'config', 'completion']);

/** The README's words with the built CLI for `stream-posts` and this test's serve for the default address. */
function pasted(line: string, url: string): string {
  const [, env = '', args = ''] = /^((?:[A-Z_]+=\S+ )*)stream-posts (.*)$/.exec(line) ?? [];
  return `${env}${cliCommandLine([])} ${args.replaceAll('ws://127.0.0.1:8787', url)}`;
}

describe("the README's examples", () => {
  it('are found in the command table', () => {
    expect(EXAMPLES.map(({ name }) => name)).toEqual(expect.arrayContaining(['listen', 'tree', 'post', 'history']));
    expect(EXPORTED_KEY).toBeDefined();
  });

  it.each(EXAMPLES.filter(({ name }) => !NOT_RUN.has(name)).map(({ name, line }) => [name, line]))(
    '%s: `%s` prints something on a fresh serve',
    { timeout: 60_000 },
    async (_name, line) => {
      const serve = await startServe();
      // `scenario from-recording` reads a `listen --json` recording: made first, as the README's flow does.
      const command = line.includes('from-recording feed.ndjson')
        ? `cd "$(mktemp -d)" && ${cliCommandLine(['history', '--json'])} > feed.ndjson && ${pasted(line, serve.url)} && cat scenario.ndjson`
        : pasted(line, serve.url);
      // STREAM_POSTS_ADMIN_URL is what `serve --exec` gives its command; `faults` reads it.
      const env = {
        STREAM_POSTS_URL: serve.url,
        STREAM_POSTS_ADMIN_URL: serve.httpUrl,
        STREAM_POSTS_API_KEY: EXPORTED_KEY,
      };
      const run = shell(command, { env });
      // `listen` and `tree` follow the feed until stopped: something printed is enough.
      await run.waitFor(({ stdout }) => stdout.trim() !== '', 'output');
    },
  );
});
