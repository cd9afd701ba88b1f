import { beforeAll, describe, expect, it } from 'vitest';
import { adminState, KEYS } from '../support/harness.js';
import { cliCommandLine, ensureBuilt, finish, runToEnd } from '../support/cli.js';
import { expectCleanError, jsonLines, postWithCli, subscribedInProcess, waitForLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { startServe } from '../support/serve.js';

beforeAll(() => ensureBuilt());

const reconnectedLine = /^stream-posts: reconnected: /m;

/** Runs `exec` under `serve --exec` (exit 0 expected); the JSON lines it printed. */
async function underExec(exec: string, serveFlags: string[] = []): Promise<unknown[]> {
  // A process of its own: the --exec command writes to the standard output it inherits.
  const result = await runToEnd(['serve', '--port', '0', '--quiet', ...serveFlags, '--exec', exec]);
  expect(result.code, result.stderr).toBe(0);
  return jsonLines(
    result.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .join('\n'),
  );
}

describe('stream-posts faults', () => {
  it('adds a fault from flags or JSON, lists it, clears one and all; --url takes the service address', async () => {
    const serve = await startServe();
    const admin = ['--admin-url', `${serve.httpUrl}/_admin`];
    const added = await runInProcess([
      'faults',
      'add',
      'fail-publishes',
      '--count',
      '2',
      '--user',
      'newsdesk',
      ...admin,
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe('f1 fail-publishes code="unavailable" count=2 user=newsdesk\n');
    const json = await runInProcess([
      'faults',
      'add',
      '{"type":"delay-deliveries","delayMs":200}',
      '--url',
      serve.url,
      '--json',
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(jsonLines(json.stdout)).toEqual([
      { id: 'f2', type: 'delay-deliveries', delayMs: 200, jitterMs: 0, createdAt: expect.any(String) },
    ]);
    const listed = await runInProcess(['faults', 'list', '--json', ...admin]);
    expect(jsonLines(listed.stdout).map((fault) => fault.id)).toEqual(['f1', 'f2']);

    const one = await runInProcess(['faults', 'clear', 'f1', ...admin]);
    expect([one.code, one.stderr]).toEqual([0, 'cleared 1 fault\n']);
    const all = await runInProcess(['faults', 'clear', ...admin]);
    expect([all.code, all.stderr]).toEqual([0, 'cleared 1 fault\n']);
    const none = await runInProcess(['faults', 'list', ...admin]);
    expect([none.code, none.stdout, none.stderr]).toEqual([0, '', 'no faults in force\n']);
    const noConnections = await runInProcess(['faults', 'connections', ...admin]);
    expect([noConnections.code, noConnections.stdout, noConnections.stderr]).toEqual([0, '', 'no open connections\n']);
    const noConnectionsJson = await runInProcess(['faults', 'connections', '--json', ...admin]);
    expect([noConnectionsJson.code, noConnectionsJson.stdout, noConnectionsJson.stderr]).toEqual([0, '', '']);
  });

  it('refuses bad input: an unknown type or bad JSON before sending (exit 2), the service refusal with its code (exit 1)', async () => {
    const serve = await startServe();
    const admin = ['--admin-url', serve.url];
    const unknown = await runInProcess(['faults', 'add', 'explode', ...admin]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown fault "explode": one of close, refuse-connections');
    const badJson = await runInProcess(['faults', 'add', '{"type":', ...admin]);
    expect([badJson.code, badJson.stderr]).toEqual([2, expect.stringContaining('the fault is not valid JSON')]);
    const both = await runInProcess(['faults', 'add', '{"type":"go-silent"}', '--user', 'alice', ...admin]);
    expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('not both (--user with JSON)')]);
    // A type without the flag it needs: named before anything is sent.
    const noDelay = await runInProcess(['faults', 'add', 'delay-deliveries', ...admin]);
    expect([noDelay.code, noDelay.stderr]).toEqual([2, expect.stringContaining('--delay')]);
    const noFrame = await runInProcess(['faults', 'add', 'send-frame', '--user', 'alice', ...admin]);
    expect([noFrame.code, noFrame.stderr]).toEqual([2, expect.stringContaining('--frame')]);
    // The same fault as JSON is the service's to refuse.
    const refused = await runInProcess(['faults', 'add', '{"type":"delay-deliveries"}', ...admin]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('stream-posts: invalid-argument: delayMs is required: an integer from 0 to 600000\n');
    const missing = await runInProcess(['faults', 'clear', 'f7', ...admin]);
    expect([missing.code, missing.stderr]).toEqual([1, 'stream-posts: not-found: no fault with id "f7"\n']);
    expect(jsonLines((await runInProcess(['faults', 'list', '--json', ...admin])).stdout)).toEqual([]);
  });

  it('needs the admin token when serve has one (exit 3 naming the flag), and takes it from the environment', async () => {
    const serve = await startServe(['--admin-token', 'cli-fault-token']);
    const admin = ['--admin-url', serve.url];
    const without = await runInProcess(['faults', 'list', ...admin]);
    expect(without.code).toBe(3);
    expect(without.stderr).toContain('needs the admin token: --admin-token or STREAM_POSTS_ADMIN_TOKEN');
    expectCleanError(without.stderr, ['cli-fault-token']);
    const withEnv = await runInProcess(['faults', 'add', 'go-silent', '--user', 'bob', ...admin], {
      env: { STREAM_POSTS_ADMIN_TOKEN: 'cli-fault-token' },
    });
    expect(withEnv.code, withEnv.stderr).toBe(0);
    expect(withEnv.stdout).toContain('go-silent');
  });

  it('needs no flags under serve --exec, where the admin URL and token are set', async () => {
    const exec = cliCommandLine(['faults', 'add', 'drop-acks', '--count', '1', '--json']);
    expect(await underExec(exec, ['--admin-token', 'exec-token'])).toEqual([
      expect.objectContaining({ id: 'f1', type: 'drop-acks', count: 1 }),
    ]);
  });

  it('--url beats STREAM_POSTS_ADMIN_URL, under serve --exec too; --admin-url with --url is exit 2', async () => {
    const serve = await startServe();
    const deadAdmin = { STREAM_POSTS_ADMIN_URL: 'http://127.0.0.1:9/_admin' };
    const overEnv = await runInProcess(['faults', 'list', '--json', '--url', serve.url], { env: deadAdmin });
    expect([overEnv.code, overEnv.stderr]).toEqual([0, '']);
    const both = await runInProcess(['faults', 'list', '--admin-url', `${serve.httpUrl}/_admin`, '--url', serve.url]);
    expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('give --admin-url or --url, not both')]);
    const exec = `${cliCommandLine(['faults', 'add', 'go-silent', '--json'])} --url "$STREAM_POSTS_URL"`;
    expect(await underExec(exec)).toEqual([expect.objectContaining({ type: 'go-silent' })]);
  });

  it('says when nothing answers there (exit 3, naming --admin-url)', async () => {
    const result = await runInProcess(['faults', 'list', '--admin-url', 'http://127.0.0.1:9/_admin']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      /^stream-posts: cannot reach http:\/\/127\.0\.0\.1:9\/_admin\/faults: .*\(--admin-url\)\n$/,
    );
  });
});

describe('the CLI client under injected faults', () => {
  it('listen: after close 1012 it says reconnecting, reconnects and prints every post once', async () => {
    const serve = await startServe();
    const admin = ['--admin-url', serve.url];
    const listen = await subscribedInProcess([
      'listen',
      '--url',
      serve.url,
      '--api-key',
      KEYS.bob,
      '--streams',
      'macro-wire',
      '--json',
    ]);
    const { post: first } = await postWithCli(serve.url, 'macro-wire', 'before the drop');
    await waitForLines(listen, 1);
    const close = await runInProcess([
      'faults',
      'add',
      'close',
      '--code',
      '1012',
      '--reason',
      'service restart',
      '--user',
      'bob',
      '--json',
      ...admin,
    ]);
    expect(jsonLines(close.stdout)[0]).toMatchObject({ type: 'close', code: 1012, applied: 1 });
    const { post: second } = await postWithCli(serve.url, 'macro-wire', 'during the drop');
    await listen.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnection');
    expect(listen.stderr).toMatch(/reconnecting in .*close 1012, service restart/);
    const lines = await waitForLines(listen, 2);
    expect(lines.map((event) => event.data.id)).toEqual([first.id, second.id]);
    listen.interrupt('SIGINT');
    expect((await finish(listen)).code).toBe(0);
  });

  it('listen: close 4401 ends it with exit 3 (the key was refused)', async () => {
    const serve = await startServe();
    const listen = await subscribedInProcess(['listen', '--url', serve.url, '--api-key', KEYS.alice, '--json']);
    await runInProcess([
      'faults',
      'add',
      '{"type":"close","code":4401,"reason":"unauthorized"}',
      '--admin-url',
      serve.url,
    ]);
    const ended = await finish(listen);
    expect(ended.code).toBe(3);
    expect(ended.stderr).toContain('refused the key');
    expectCleanError(ended.stderr);
  });

  it('post: fail-publishes makes it exit 1 with the code, and nothing is stored', async () => {
    const serve = await startServe();
    const before = (await adminState(serve)).posts;
    await runInProcess([
      'faults',
      'add',
      'fail-publishes',
      '--code',
      'unavailable',
      '--message',
      'store down',
      '--admin-url',
      serve.url,
    ]);
    for (const via of ['ws', 'rest']) {
      const post = await runInProcess([
        'post',
        '--url',
        serve.url,
        '--api-key',
        KEYS.macroWire,
        '--stream',
        'macro-wire',
        '--via',
        via,
        'lost',
      ]);
      expect(post.code, `${via}: ${post.stderr}`).toBe(1);
      expect(post.stderr).toContain('unavailable');
      expect(post.stderr).toContain('store down');
    }
    expect((await adminState(serve)).posts).toBe(before);
  });
});
