import { beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/poll.js';
import { cliCommandLine, client, ensureBuilt, shell } from '../support/cli.js';
import { KEYS, openClient } from '../support/harness.js';
import { freeFixedPort } from '../support/ports.js';

beforeAll(ensureBuilt);

/**
 * Runs a serve with the flags; connects alice (an info line), has her publish where she may not
 * (a refused command: info), lists her streams through REST
 * (a debug line), then asks with a wrong key (a warning, then a debug line). Log lines are
 * written in the order things happen, so once `last` is there, every line before it is too.
 * The log is on stderr; stdout has the start-up output only.
 */
async function logOf(flags: string[], last = /warn +request failed/): Promise<{ stdout: string; log: string[] }> {
  const serve = client(['serve', '--port', '0', ...flags]);
  const listening = /^listening on (ws:\/\/\S+)$|"msg":"listening","url":"(ws:\/\/[^"]+)"/m;
  await serve.waitFor((out) => listening.test(out.stdout), 'the listening line');
  const [, text, json] = listening.exec(serve.stdout)!;
  const url = (text ?? json)!;
  const alice = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
  await alice.nextEvent('connected');
  // A command the service refuses is the client's mistake, answered to it: info, not a warning.
  const refusedCommand = await alice.request('add-stream-post', { streamId: 'macro-wire', content: 'x' });
  expect(refusedCommand.event).toBe('error');
  const httpUrl = url.replace(/^ws/, 'http');
  const listed = await fetch(`${httpUrl}/v1/streams`, { headers: { 'x-api-key': KEYS.alice } });
  expect(listed.status).toBe(200);
  const refused = await fetch(`${httpUrl}/v1/streams`, { headers: { 'x-api-key': 'sp_wrong_key_verbosity' } });
  expect(refused.status).toBe(401);
  await serve.waitFor((out) => last.test(out.stderr), String(last));
  return { stdout: serve.stdout, log: serve.stderr.split('\n').filter((line) => line !== '') };
}

describe('serve -q and -v', () => {
  it('-q prints the listening line, then warnings and errors only; --quiet is the same', async () => {
    for (const flag of ['-q', '--quiet']) {
      const { stdout, log: lines } = await logOf([flag]);
      expect(stdout).toMatch(/^listening on ws:\/\/127\.0\.0\.1:\d+\n$/);
      expect(lines.map((line) => line.split(/ +/).slice(1, 4).join(' '))).toEqual(['warn request failed']);
      expect(lines.join('\n')).not.toContain('sp_wrong_key_verbosity');
    }
  });

  it('-v adds debug lines (each REST request); without it there are none', async () => {
    const [{ log: verbose }, { log: plain }] = await Promise.all([logOf(['-v'], /status=401/), logOf([])]);
    const debug = (lines: string[]) => lines.filter((line) => / debug /.test(line));
    expect(debug(verbose)).toHaveLength(2);
    expect(debug(verbose)[0]).toMatch(/ debug rest request method=GET path=\/v1\/streams status=200$/);
    expect(debug(verbose)[1]).toMatch(/ debug rest request method=GET path=\/v1\/streams status=401$/);
    expect(debug(plain)).toEqual([]);
    for (const lines of [verbose, plain]) {
      expect(lines.some((line) => / info +connected /.test(line))).toBe(true);
      expect(lines.join('\n')).not.toContain('sp_wrong_key_verbosity');
    }
  });

  it('-v with --log-format json writes debug lines as JSON', async () => {
    const lines = (await logOf(['--verbose', '--log-format', 'json'], /"status":401/)).log;
    const debug = lines.map((line) => JSON.parse(line)).filter((line) => line.level === 'debug');
    expect(debug.map(({ msg, method, path, status }) => ({ msg, method, path, status }))).toEqual([
      { msg: 'rest request', method: 'GET', path: '/v1/streams', status: 200 },
      { msg: 'rest request', method: 'GET', path: '/v1/streams', status: 401 },
    ]);
  });
});

describe('serve whose stdout reader has gone', () => {
  it('goes on serving, its log on stderr, when the pipe closes before the start-up output is written', async () => {
    const port = await freeFixedPort();
    // `true` ends at once: every start-up line meets a closed pipe (EPIPE), as the lines after
    // the first do under `serve | head -1`.
    const piped = shell(`${cliCommandLine(['serve', '--port', String(port)])} | true`);
    try {
      await until(
        async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true,
        'serve to answer /healthz',
        10_000,
      );
      const alice = await openClient(`ws://127.0.0.1:${port}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
      await alice.next((message) => message.event === 'connected');
      await piped.waitFor((out) => /info +connected/.test(out.stderr), "the connection's log line");
      alice.close();
      expect(piped.stderr).not.toMatch(/EPIPE/);
    } finally {
      process.kill(-piped.child.pid!, 'SIGTERM');
    }
  });
});
