import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, openClient } from '../support/harness.js';
import { ensureBuilt, runCli } from '../support/cli.js';

let tmp: string;

beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-serve-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function writeTemp(name: string, content: unknown): Promise<string> {
  const path = join(tmp, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const customSeed = {
  users: [{ id: 'carol', name: 'Carol', readerKey: 'sp_custom_reader_carol', follows: ['desk'] }],
  streams: [{ id: 'desk', name: 'Desk', owner: 'carol', key: 'sp_custom_stream_desk' }],
};

describe('serve start-up', () => {
  it('prints the URL first, then the keys and lines to paste; a printed key connects', async () => {
    const serve = runCli(['serve', '--port', '0']);
    const url = await serve.url();
    await serve.waitFor((out) => out.stdout.includes('export STREAM_POSTS_API_KEY='), 'the end of the banner');
    expect(serve.lines[0]).toBe(`listening on ${url}`);
    for (const key of Object.values(KEYS)) expect(serve.stdout).toContain(key);
    expect(serve.lines).toContain(`export STREAM_POSTS_URL=${url}`);
    expect(serve.lines).toContain(`export STREAM_POSTS_API_KEY=${KEYS.alice}`);

    const printedKey = /^\s+bob\s+(\S+)/m.exec(serve.stdout)![1]!;
    const bob = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': printedKey } });
    expect((await bob.nextEvent('connected')).data).toMatchObject({
      userId: 'bob',
      streams: ['macro-wire', 'whale-alerts'],
    });
  });

  it('writes only JSON lines with --log-format json: the start-up on stdout, the log on stderr', async () => {
    const serve = runCli(['serve', '--port', '0', '--log-format', 'json']);
    await serve.waitFor((out) => out.stdout.includes('"whale-alerts"'), 'the key lines');
    const first = JSON.parse(serve.lines[0]!);
    expect(first).toMatchObject({ msg: 'listening', url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/) });
    const alice = await openClient(`${first.url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
    await alice.nextEvent('connected');
    const stranger = await openClient(`${first.url}/v1/ws?apiKey=sp_wrong_key_123`);
    await stranger.closed;
    await serve.waitFor((out) => out.stderr.includes('rejected connection'), 'the rejection log line');
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
    const log = serve.stderr.split('\n').filter((line) => line !== '');
    for (const line of [...serve.lines, ...log]) expect(() => JSON.parse(line), line).not.toThrow();
    expect(new Set(serve.lines.map((line) => JSON.parse(line).msg))).toEqual(
      new Set(['listening', 'reader key', 'stream key']),
    );
    expect(log.map((line) => JSON.parse(line).msg)).toEqual(
      expect.arrayContaining(['rejected connection', 'shutting down']),
    );
  });

  it('--json is --log-format json: its first line on stdout is the listening line as JSON, --quiet or not', async () => {
    for (const quiet of [[], ['--quiet']]) {
      const serve = runCli(['serve', '--port', '0', '--json', ...quiet]);
      await serve.waitFor((out) => out.stdout.includes('\n'), 'the first line');
      expect(JSON.parse(serve.lines[0]!)).toMatchObject({
        level: 'info',
        msg: 'listening',
        url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/),
      });
      serve.child.kill('SIGTERM');
      expect((await serve.exit()).code).toBe(0);
      for (const line of serve.lines) expect(() => JSON.parse(line), line).not.toThrow();
    }
  });

  it('prints the keys of a valid custom seed, not the demo keys', async () => {
    const seed = await writeTemp('custom-seed.json', customSeed);
    const serve = runCli(['serve', '--port', '0', '--seed', seed]);
    const url = await serve.url();
    await serve.waitFor((out) => out.stdout.includes('export STREAM_POSTS_API_KEY='), 'the end of the banner');
    expect(serve.stdout).toContain('sp_custom_reader_carol');
    expect(serve.stdout).toContain('sp_custom_stream_desk');
    expect(serve.stdout).not.toContain(KEYS.alice);
    const carol = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': 'sp_custom_reader_carol' } });
    expect((await carol.nextEvent('connected')).data).toMatchObject({ userId: 'carol', streams: ['desk'] });
  });

  it('serves wss:// with --tls-cert and --tls-key', async () => {
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keySize: 2048, algorithm: 'sha256' });
    const cert = await writeTemp('cert.pem', pems.cert);
    const key = await writeTemp('key.pem', pems.private);
    const serve = runCli(['serve', '--port', '0', '--tls-cert', cert, '--tls-key', key]);
    const url = await serve.url();
    expect(url).toMatch(/^wss:\/\//);
    expect(serve.lines[0]).toBe(`listening on ${url}`);
    const alice = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice }, rejectUnauthorized: false });
    expect((await alice.nextEvent('connected')).data.userId).toBe('alice');
  });
});

describe('serve shutdown', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s closes clients with 1001 and exits 0', async (signal) => {
    const serve = runCli(['serve', '--port', '0']);
    const url = await serve.url();
    const alice = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
    await alice.nextEvent('connected');
    expect((await alice.request('on-stream-post', {})).event).toBe('sub_ack');
    serve.child.kill(signal);
    expect((await alice.closed).code).toBe(1001);
    expect(await serve.exit()).toEqual({ code: 0, signal: null });
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'treats %s arriving right after the listening line as a normal end',
    async (signal) => {
      // A script reads the URL line, then may stop the server at once: that is still a clean exit.
      const runs = [0, 1, 2].map(() => runCli(['serve', '--port', '0', '--quiet']));
      await Promise.all(
        runs.map(async (serve) => {
          await serve.url();
          serve.child.kill(signal);
        }),
      );
      const exits = await Promise.all(runs.map((serve) => serve.exit()));
      expect(exits).toEqual(runs.map(() => ({ code: 0, signal: null })));
    },
  );
});

describe('serve --exec', () => {
  it('gives the command the URL and keys, and exits with its exit code', async () => {
    const script = [
      'const WebSocket = require("ws"); const env = process.env;',
      'const ws = new WebSocket(env.STREAM_POSTS_URL + "/v1/ws", { headers: { "x-api-key": env.STREAM_POSTS_STREAM_KEY_MACRO_WIRE } });',
      'ws.on("message", (raw) => { const m = JSON.parse(raw);',
      '  if (m.event === "connected") ws.send(JSON.stringify({ event: "add-stream-post", data: { streamId: "macro-wire", content: "from exec", contentType: "rawtext" } }));',
      '  else { console.log("REPLY " + JSON.stringify(m)); ws.close(); } });',
      'ws.on("close", () => { console.log("ENV " + JSON.stringify({ url: env.STREAM_POSTS_URL, api: env.STREAM_POSTS_API_KEY,',
      '  alice: env.STREAM_POSTS_READER_KEY_ALICE, bob: env.STREAM_POSTS_READER_KEY_BOB, macro: env.STREAM_POSTS_STREAM_KEY_MACRO_WIRE,',
      '  whale: env.STREAM_POSTS_STREAM_KEY_WHALE_ALERTS })); process.exit(0); });',
    ].join('\n');
    const serve = runCli(['serve', '--port', '0', '--exec', `node -e '${script}'`]);
    expect(await serve.exit()).toEqual({ code: 0, signal: null });
    const url = await serve.url('stderr');
    const reply = JSON.parse(/^REPLY (.*)$/m.exec(serve.stdout)![1]!);
    expect(reply).toMatchObject({
      event: 'ack',
      data: { duplicate: false, post: { streamId: 'macro-wire', text: 'from exec' } },
    });
    expect(JSON.parse(/^ENV (.*)$/m.exec(serve.stdout)![1]!)).toEqual({
      url,
      api: KEYS.alice,
      alice: KEYS.alice,
      bob: KEYS.bob,
      macro: KEYS.macroWire,
      whale: KEYS.whaleAlerts,
    });
  });

  it.each([7, 0])('exits with the command’s exit code %i', async (code) => {
    const serve = runCli(['serve', '--port', '0', '--exec', `node -e 'process.exit(${code})'`]);
    expect(await serve.exit()).toEqual({ code, signal: null });
  });
});

describe('serve usage errors (exit 2)', () => {
  /** Runs every case at once (each is a process start-up); returns each run by name. */
  async function runAll(cases: [string, string[]][]) {
    const runs = cases.map(([name, args]) => ({ name, serve: runCli(['serve', '--port', '0', ...args]) }));
    await Promise.all(runs.map(({ serve }) => serve.exit()));
    return runs;
  }

  it('rejects bad flag values and half a TLS pair', async () => {
    const junk = await writeTemp('junk.pem', 'not a certificate');
    const runs = await runAll([
      ['--port abc', ['--port', 'abc']],
      ['--port 70000', ['--port', '70000']],
      ['--log-format xml', ['--log-format', 'xml']],
      ['--idempotency-window soon', ['--idempotency-window', 'soon']],
      ['--upload-window 0', ['--upload-window', '0']],
      ['--rate-limit -1', ['--rate-limit', '-1']],
      // Past the top of a range: commander's parser takes the number, startServer refuses it.
      ['--rate-limit 2000000', ['--rate-limit', '2000000']],
      ['--key-rate-limit 2000000', ['--key-rate-limit', '2000000']],
      ['--max-buffered lots', ['--max-buffered', 'lots']],
      ['--body-timeout 0', ['--body-timeout', '0']],
      ['--headers-timeout 30d', ['--headers-timeout', '30d']],
      ['--keep-alive 0', ['--keep-alive', '0']],
      ['--tls-cert alone', ['--tls-cert', junk]],
      ['--tls-key alone', ['--tls-key', junk]],
      ['missing TLS files', ['--tls-cert', join(tmp, 'no-cert.pem'), '--tls-key', join(tmp, 'no-key.pem')]],
      ['TLS files that are not PEM', ['--tls-cert', junk, '--tls-key', junk]],
    ]);
    for (const { name, serve } of runs) {
      expect(serve.child.exitCode, `${name}\n${serve.stderr}`).toBe(2);
      expect(serve.stdout, name).not.toContain('listening on');
      expect(serve.stderr.trim(), name).not.toBe('');
      expect(serve.stderr, name).not.toContain('internal error');
      if (name.startsWith('--')) expect(serve.stderr, name).toContain(name.split(' ')[0]!);
    }
  });

  it('rejects an invalid seed, naming the field and no key', async () => {
    const secret = 'sp_secret_key_abcdef';
    const [user, stream] = [customSeed.users[0]!, customSeed.streams[0]!];
    const cases: [string, string, unknown][] = [
      [
        'an unknown owner',
        'seed.streams[0].owner',
        { ...customSeed, streams: [{ ...stream, owner: 'nobody', key: secret }] },
      ],
      [
        'a repeated key',
        'seed.streams[0].key',
        { users: [{ ...user, readerKey: secret }], streams: [{ ...stream, key: secret }] },
      ],
      ['a key too short', 'seed.users[0].readerKey', { ...customSeed, users: [{ ...user, readerKey: 'Zq9xW' }] }],
      [
        'a follow of an unknown stream',
        'seed.users[0].follows[0]',
        { ...customSeed, users: [{ ...user, follows: ['ghost'] }] },
      ],
    ];
    const paths = await Promise.all(cases.map(([, , seed], i) => writeTemp(`bad-seed-${i}.json`, seed)));
    const runs = await runAll(cases.map(([name], i) => [name, ['--seed', paths[i]!]]));
    runs.forEach(({ name, serve }, i) => {
      expect(serve.child.exitCode, `${name}\n${serve.stderr}`).toBe(2);
      expect(serve.stderr, name).toContain(cases[i]![1]);
      for (const key of [secret, 'Zq9xW', user.readerKey, stream.key]) expect(serve.stderr, name).not.toContain(key);
      expect(serve.stdout, name).not.toContain('listening on');
    });
  });

  it('rejects a seed file that is not JSON, or is missing', async () => {
    const broken = await writeTemp('broken-seed.json', '{"users": [');
    const missing = join(tmp, 'no-such-seed.json');
    const [notJson, absent] = await runAll([
      ['not JSON', ['--seed', broken]],
      ['missing', ['--seed', missing]],
    ]);
    expect(notJson!.serve.child.exitCode).toBe(2);
    expect(absent!.serve.child.exitCode).toBe(2);
    expect(absent!.serve.stderr).toContain(missing);
  });
});

describe('serve logs', () => {
  it('never writes a key into a log line', async () => {
    const wrong = 'sp_wrong_key_123';
    const serve = runCli(['serve', '--port', '0']);
    const url = await serve.url();
    await serve.waitFor((out) => out.stdout.includes('export STREAM_POSTS_API_KEY='), 'the end of the banner');
    const bannerLength = serve.stdout.length;
    const httpUrl = url.replace(/^ws/, 'http');

    const byHeader = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': wrong } });
    expect((await byHeader.nextEvent('error')).data.code).toBe('unauthorized');
    expect((await byHeader.closed).code).toBe(4401);
    const byQuery = await openClient(`${url}/v1/ws/on-stream-post?apiKey=${wrong}&streamIds=macro-wire`);
    expect((await byQuery.closed).code).toBe(4401);
    await expect(openClient(`${url}/v1/ws/no-such-command?apiKey=${wrong}`)).rejects.toThrow(/404/);
    expect((await fetch(`${httpUrl}/v1/streams?apiKey=${wrong}`)).status).toBe(401);
    const alice = await openClient(`${url}/v1/ws?apiKey=${KEYS.alice}`);
    await alice.nextEvent('connected');

    await serve.waitFor(
      (out) =>
        (out.stderr.match(/rejected connection/g) ?? []).length >= 2 &&
        /request failed/.test(out.stderr) &&
        / connected /.test(out.stderr),
      'the log lines of those requests',
    );
    expect(serve.stdout.length).toBe(bannerLength);
    expect(serve.stderr).not.toContain(wrong);
    const logs = serve.stderr;
    for (const key of Object.values(KEYS)) expect(logs).not.toContain(key);
  });
});
