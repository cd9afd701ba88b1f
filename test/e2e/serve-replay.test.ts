import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runToEnd } from '../support/cli.js';
import { startServe } from '../support/serve.js';
import { exchange, recording, recordingFile, wsConnection, fromServer } from '../support/recordings.js';

beforeAll(ensureBuilt);

/** One REST page and one connection nobody opens. */
const session = recording({
  connections: [wsConnection(1, [fromServer(0, { event: 'connected', data: { message: 'connected' } })])],
  requests: [
    exchange(1, 'GET', '/v1/streams', [['limit', '1']], { status: 200, json: { items: [], nextToken: null } }),
  ],
});

/** An --exec command that reads the recorded page and fails unless it was answered. */
const READ_PAGE = `node -e "fetch(process.env.STREAM_POSTS_HTTP_URL + '/v1/streams?limit=1').then((r) => process.exit(r.status === 200 ? 0 : 5))"`;

describe('serve --replay from the command line', () => {
  it('prints what went unused when --exec ends, and --replay-strict exits 1 for it', async () => {
    const file = await recordingFile(session);
    const strict = await runToEnd([
      'serve',
      '--port',
      '0',
      '--quiet',
      '--replay',
      file,
      '--replay-strict',
      '--exec',
      READ_PAGE,
    ]);
    expect(strict.code, strict.stderr).toBe(1);
    expect(strict.stderr).toContain('replay: recorded connection 1 (ws /v1/ws?apiKey=[redacted]) was never used');
    expect(strict.stderr).not.toContain('recorded request 1');
    const lenient = await runToEnd(['serve', '--port', '0', '--quiet', '--replay', file, '--exec', READ_PAGE]);
    expect(lenient.code, lenient.stderr).toBe(0);
    expect(lenient.stderr).toContain('was never used');
  });

  it('prints the same at Ctrl-C, and exits 0', async () => {
    const serve = await startServe(['--replay', await recordingFile(session)]);
    serve.cli.child.kill('SIGINT');
    const { code } = await serve.cli.exit();
    expect(code).toBe(0);
    expect(serve.cli.stderr).toContain('replay: recorded connection 1 (ws /v1/ws?apiKey=[redacted]) was never used');
    expect(serve.cli.stderr).toContain('replay: recorded request 1 (GET /v1/streams?limit=1) was never used');
  });

  it('exits 0 under --replay-strict when everything recorded was used and nothing else asked', async () => {
    const file = await recordingFile(recording({ requests: session.requests }));
    const run = await runToEnd([
      'serve',
      '--port',
      '0',
      '--quiet',
      '--replay',
      file,
      '--replay-strict',
      '--exec',
      READ_PAGE,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('replay: every recorded connection and request was used');
  });

  it('refuses a recording it cannot replay with exit 2, naming the file and the place', async () => {
    const file = await recordingFile(JSON.stringify({ ...session, meta: { ...session.meta, version: 2 } }));
    const run = await runToEnd(['serve', '--port', '0', '--replay', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`--replay: ${file} at meta.version: is 2; this stream-posts reads version 1`);
    const notJson = await runToEnd(['serve', '--port', '0', '--replay', await recordingFile('{"meta": ')]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/--replay: .*session\.json: is not JSON/);
  });

  it('refuses replay flags without --replay, and a bad speed, with exit 2', async () => {
    const alone = await runToEnd(['serve', '--port', '0', '--replay-strict']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--replay-strict needs --replay FILE');
    const speed = await runToEnd(['serve', '--port', '0', '--replay', 'x.json', '--replay-speed', 'fast']);
    expect(speed.code).toBe(2);
    expect(speed.stderr).toContain('expected recorded, max or a number above 0');
    const both = await runToEnd([
      'serve',
      '--port',
      '0',
      '--record',
      'r.json',
      '--upstream',
      'ws://127.0.0.1:1',
      '--replay',
      'x.json',
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--replay cannot be combined with --record');
  });
});
