import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startServer, type StreamPostsServer } from '../../src/index.js';
import { client, ensureBuilt, type CliProcess } from './cli.js';

export interface Serve {
  cli: CliProcess;
  url: string;
  httpUrl: string;
  port: number;
}

/** `serve --port 0 --quiet` (or the given port); resolves with its URLs. `scope: 'file'` shares it between a file's tests. */
export async function startServe(args: string[] = [], port = 0, scope: 'test' | 'file' = 'test'): Promise<Serve> {
  const cli = client(['serve', '--port', String(port), '--quiet', ...args], { scope });
  const url = await cli.url();
  return { cli, url, httpUrl: url.replace(/^ws/, 'http'), port: Number(new URL(url).port) };
}

/** What most e2e files share: the CLI built, a temporary folder, one server for all the file's tests. */
export interface CliFixture {
  /** The library's server (startServer, as `serve` runs it, demo seed, admin on), in this process. */
  readonly serve: Omit<Serve, 'cli'>;
  readonly tmp: string;
}

/** Sets up a CliFixture before the file's tests (`name` labels the folder) and removes both after them. */
export function cliFixture(name: string): CliFixture {
  const fixture = {} as { serve: Omit<Serve, 'cli'>; tmp: string };
  let server: StreamPostsServer | undefined;
  beforeAll(async () => {
    ensureBuilt();
    fixture.tmp = await mkdtemp(join(tmpdir(), `stream-posts-${name}-`));
    server = await startServer({ host: '127.0.0.1', port: 0 });
    const { url, httpUrl } = server;
    fixture.serve = { url, httpUrl, port: Number(new URL(url).port) };
  });
  afterAll(async () => {
    await server?.close();
    await rm(fixture.tmp, { recursive: true, force: true });
  });
  return fixture;
}

/** One line of `serve --log-format json`. */
export interface LogLine {
  time: string;
  level: string;
  msg: string;
  [field: string]: unknown;
}

/**
 * `serve --log-format json` (not --quiet): the `listening` record on stdout, then its log on
 * stderr, whose line order is the order things happened in the server.
 */
export interface LoggedServe extends Serve {
  /** Every complete log line so far, in order. */
  logs(): LogLine[];
}

function parseLogs(cli: CliProcess): LogLine[] {
  const complete = cli.stderr.split('\n');
  complete.pop();
  return [...cli.lines, ...complete].filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as LogLine);
}

/** Starts `serve --port <port> --log-format json ...args`; resolves once it logged `listening`, rejects if it ends first. */
export async function startLoggedServe(args: string[], port: number, timeoutMs = 60_000): Promise<LoggedServe> {
  const cli = client(['serve', '--port', String(port), '--log-format', 'json', ...args]);
  await cli.waitFor((out) => /"msg":"listening"/.test(out.stdout), 'the listening log line', timeoutMs);
  const listening = parseLogs(cli).find((line) => line.msg === 'listening')!;
  const url = String(listening['url']);
  return {
    cli,
    url,
    httpUrl: String(listening['httpUrl']),
    port: Number(new URL(url).port),
    logs: () => parseLogs(cli),
  };
}
