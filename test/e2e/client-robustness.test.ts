import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { CONNECTED, scriptedService, silentHttpService, silentTcpService, subAck } from '../support/hostile.js';
import { client, ensureBuilt, finish, inTerminal, SCRIPT } from '../support/cli.js';
import { runInProcess } from '../support/in-process.js';
import { expectCleanError, waitForScreen } from '../support/cli-output.js';
import { KEYS } from '../support/harness.js';
import { startServe, type Serve } from '../support/serve.js';

let tmp: string;
beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-robust-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const KEY = 'sp_test_key_never_shown';
const POST_ARGS = ['--api-key', KEY, '--stream', 's', 'hello'];

describe('--timeout bounds every wait; exit 3 naming what was awaited', () => {
  it('listen and tree against a service that upgrades and says nothing: sub_ack (and nothing at all)', async () => {
    const service = await scriptedService(() => {});
    const results = await Promise.all(
      ['listen', 'tree'].map((command) =>
        runInProcess([command, '--url', service.url, '--api-key', KEY, '--timeout', '300ms']),
      ),
    );
    const commands = ['on-stream-post', 'on-stream-post-tree'];
    results.forEach((result, index) => {
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toContain(
        `timed out after 300ms waiting for sub_ack (the reply to ${commands[index]}) from ${service.url}/v1/ws (it has sent nothing on this connection)`,
      );
      expectCleanError(result.stderr, [KEY]);
    });
  });

  it('post over the WebSocket against a service that says connected and never acknowledges: ack', async () => {
    const service = await scriptedService((ws) => ws.send(CONNECTED));
    const result = await runInProcess(['post', '--url', service.url, '--timeout', '300ms', ...POST_ARGS]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(
      /timed out after 300ms waiting for ack \(the reply to add-stream-post\) from ws:\/\/.*; the post may have been published: re-run with --idempotency-key sp-[0-9a-f-]+ to publish it at most once/,
    );
    expectCleanError(result.stderr, [KEY]);
  });

  it('post --via rest against an HTTP server that never replies: the REST reply', async () => {
    const url = await silentHttpService();
    const result = await runInProcess(['post', '--via', 'rest', '--url', url, '--timeout', '300ms', ...POST_ARGS]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(
      new RegExp(
        `timed out after 300ms waiting for a reply to POST ${url.replace('ws:', 'http:')}/v1/streams/s/post; the post may have been published: re-run with --idempotency-key sp-[0-9a-f-]+ to publish it at most once`,
      ),
    );
    expectCleanError(result.stderr, [KEY]);
  });

  it('a TCP peer that never answers the upgrade: the upgrade, for listen and post', async () => {
    const url = await silentTcpService();
    const results = await Promise.all([
      runInProcess(['listen', '--url', url, '--api-key', KEY, '--timeout', '300ms']),
      runInProcess(['post', '--url', url, '--timeout', '300ms', ...POST_ARGS]),
    ]);
    for (const result of results) {
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toContain(
        `timed out after 300ms waiting for the reply to the WebSocket upgrade from ${url}/v1/ws`,
      );
    }
  });

  it('zero or a word is refused with the accepted forms (exit 2), nothing sent; a bare number is seconds', async () => {
    const results = await Promise.all(
      ['0', '0ms', 'soon'].map((value) => runInProcess(['listen', '--api-key', KEY, '--timeout', value])),
    );
    for (const result of results) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(
        /--timeout <duration>.*a number of seconds \(5, 1\.5\) or a number with a unit: 500ms, 30s/,
      );
    }
    const help = await runInProcess(['listen', '--help']);
    expect(help.stdout).toMatch(/--timeout <duration>[\s\S]*a\s+bare\s+number\s+is\s+seconds[\s\S]*\(default: 30s\)/);
  });
});

describe('a key that is not one line of printable characters', () => {
  it('is exit 2 naming where it came from, never showing it: file, environment, flag, profile', async () => {
    const secret = 'sp_secret_with_a_comment';
    const keyFile = join(tmp, 'key.txt');
    await writeFile(keyFile, `# my key\n${secret}\n`);
    const config = join(tmp, 'config');
    await mkdir(join(config, 'stream-posts'), { recursive: true });
    await writeFile(
      join(config, 'stream-posts', 'config.json'),
      JSON.stringify({ profiles: { work: { apiKey: `${secret}\u0007` } } }),
    );
    const results = await Promise.all([
      runInProcess(['listen', '--api-key-file', keyFile]),
      runInProcess(['listen'], { env: { STREAM_POSTS_API_KEY: `${secret}\u001b]0;x\u0007` } }),
      runInProcess(['post', '--api-key', `${secret}\tmore`, '--stream', 's', 'hello']),
      runInProcess(['listen', '--profile', 'work'], { env: { XDG_CONFIG_HOME: config } }),
    ]);
    const sources = [
      `--api-key-file ${keyFile}`,
      'STREAM_POSTS_API_KEY',
      '--api-key',
      `profile "work" in ${join(config, 'stream-posts', 'config.json')}`,
    ];
    results.forEach((result, index) => {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(
        `stream-posts: the API key from ${sources[index]} must be one line of printable characters (ASCII letters, digits, punctuation)\n`,
      );
      expectCleanError(result.stderr, [secret]);
    });
  });

  it('a key file whose only extra is its final newline is fine', async () => {
    const serve = await startServe();
    const keyFile = join(tmp, 'good-key.txt');
    await writeFile(keyFile, `${KEYS.macroWire}\n`);
    const result = await runInProcess([
      'post',
      '--url',
      serve.url,
      '--api-key-file',
      keyFile,
      '--stream',
      'macro-wire',
      'hello',
    ]);
    expect(result.code, result.stderr).toBe(0);
  });

  it('config set refuses it too, and stores nothing', async () => {
    const config = join(tmp, 'config-set');
    const keyFile = join(tmp, 'two-lines.txt');
    await writeFile(keyFile, 'sp_first_line\nsp_second_line\n');
    const result = await runInProcess(['config', 'set', 'work', '--api-key-file', keyFile], {
      env: { XDG_CONFIG_HOME: config },
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      `the API key from --api-key-file ${keyFile} must be one line of printable characters`,
    );
    expectCleanError(result.stderr, ['sp_first_line', 'sp_second_line']);
    expect(existsSync(join(config, 'stream-posts', 'config.json'))).toBe(false);
  });
});

// A user's terminal: colour, and no CI variable (ora keeps its spinner off where CI is set, as in CI itself).
const SPINNER_ON = { NO_COLOR: undefined, CI: undefined };

describe.skipIf(!existsSync(SCRIPT))('Ctrl-C on a terminal, spinner on', () => {
  let serve: Serve;
  beforeAll(async () => {
    serve = await startServe([], 0, 'file');
  });

  for (const command of ['listen', 'tree']) {
    it(`ends ${command} with exit 0`, async () => {
      const terminal = inTerminal([command, '--url', serve.url, '--api-key', KEYS.alice], SPINNER_ON, '', true);
      await waitForScreen(terminal, 'subscribed:');
      // The spinner ran (and hid the cursor): its exit hook is what re-raised the signal.
      expect(terminal.stdout).toContain('\u001b[?25l');
      terminal.child.stdin!.write('\u0003');
      expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    });
  }

  it('ends demo with exit 0', async () => {
    const terminal = inTerminal(['demo', '--port', '0', '--interval', '1h'], SPINNER_ON, '', true);
    await waitForScreen(terminal, 'subscribed:');
    expect(terminal.stdout).toContain('\u001b[?25l');
    terminal.child.stdin!.write('\u0003');
    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
  });
});

describe('listen and a slow stdout', () => {
  it('stops reading while stdout is not drained (memory stays bounded), then shows every post once it is', async () => {
    const POSTS = 512;
    const text = 'x'.repeat(128 * 1024);
    let connection: WebSocket | undefined;
    const service = await scriptedService((ws) => {
      connection = ws;
      ws.send(CONNECTED);
      ws.on('message', (data) => ws.send(subAck(JSON.parse(String(data)))));
    });
    const cli = client(['listen', '--json', '-v', '--url', service.url, '--api-key', KEY]);
    // Nothing reads the child's stdout from here on: its pipe fills and stays full.
    cli.child.stdout!.pause();
    await cli.waitFor((out) => /subscribed: s/.test(out.stderr), 'the subscription');
    const rss = async () =>
      Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${cli.child.pid}/status`, 'utf8'))![1]) * 1024;
    const before = await rss();
    const createdAt = new Date(0).toISOString();
    for (let index = 0; index < POSTS; index++) {
      const post = {
        id: `p${String(index).padStart(4, '0')}`,
        streamId: 's',
        streamName: 'S',
        text,
        contentType: 'rawtext',
        createdAt,
        releaseAt: null,
        hidden: false,
        customTarget: null,
      };
      connection!.send(JSON.stringify({ event: 'stream.post.created', data: post }));
    }
    const total = POSTS * text.length;
    await cli.waitFor((out) => out.stderr.includes('the output is not keeping up'), 'the pause');
    // What was not read waits at the service, not in the reader.
    expect(connection!.bufferedAmount).toBeGreaterThan(total / 2);
    expect((await rss()) - before).toBeLessThan(total / 4);
    let lines = 0;
    cli.child.stdout!.on('data', (chunk: string) => {
      for (let at = chunk.indexOf('\n'); at >= 0; at = chunk.indexOf('\n', at + 1)) lines += 1;
    });
    cli.child.stdout!.resume();
    await cli.waitFor(() => lines >= POSTS, 'every post', 60_000);
    const ids = cli.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { data: { id: string } }).data.id);
    expect(ids).toEqual(Array.from({ length: POSTS }, (_, index) => `p${String(index).padStart(4, '0')}`));
    cli.child.kill('SIGTERM');
    expect((await finish(cli)).code).toBe(0);
  });
});
