import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { generate } from 'selfsigned';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminState, KEYS } from '../support/harness.js';
import { freePort } from '../support/ports.js';
import { expectCleanError, jsonLines } from '../support/cli-output.js';
import { BIN, runToEnd, type Finished } from '../support/cli.js';
import { startServe, cliFixture } from '../support/serve.js';

let deadUrl: string;

const fixture = cliFixture('exit');
beforeAll(async () => {
  deadUrl = `ws://127.0.0.1:${await freePort()}`;
});

/** Runs every case at once; returns the results by name. */
async function runAll(
  cases: Record<string, string[]>,
  options: { stdin?: string } = {},
): Promise<Record<string, Finished>> {
  const entries = await Promise.all(
    Object.entries(cases).map(async ([name, args]) => [name, await runToEnd(args, options)] as const),
  );
  return Object.fromEntries(entries);
}

function expectExit(results: Record<string, Finished>, code: number, stderrPattern?: Record<string, RegExp>): void {
  for (const [name, result] of Object.entries(results)) {
    expect(result.code, `${name}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(code);
    expect(result.stderr.trim(), `${name}: says why`).not.toBe('');
    expectCleanError(result.stderr);
    // One prefix for every line, commander's own errors included; usage hints aside.
    for (const line of result.stderr.trimEnd().split('\n'))
      if (line !== '(run with --help for usage)' && !line.startsWith('hint: '))
        expect(line, name).toMatch(/^stream-posts: /);
    const pattern = stderrPattern?.[name];
    if (pattern) expect(result.stderr, name).toMatch(pattern);
  }
}

describe('exit 0', () => {
  it('listen, tree and post that succeed exit 0; a dry run needs no key and no service', async () => {
    const results = await runAll({
      listen: [
        'listen',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.bob,
        '--last',
        '1',
        '--idle-timeout',
        '1s',
        '--streams',
        'macro-wire',
        '--json',
      ],
      tree: [
        'tree',
        '--url',
        `${fixture.serve.url}/v1/ws`,
        '--api-key',
        KEYS.bob,
        '--last',
        '1',
        '--idle-timeout',
        '1s',
        '--streams',
        'macro-wire',
        '--json',
      ],
      post: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.macroWire,
        '--stream',
        'macro-wire',
        'exit code zero',
      ],
      dryRun: [
        'post',
        '--dry-run',
        '--url',
        deadUrl,
        '--stream',
        'crypto-legal',
        '--idempotency-key',
        'dry-1',
        '--markdown',
        'dry *run*',
      ],
    });
    for (const [name, result] of Object.entries(results)) expect(result.code, `${name}: ${result.stderr}`).toBe(0);
    // The post of history first; the post published alongside may follow it.
    expect(jsonLines(results['listen']!.stdout)[0]).toMatchObject({
      event: 'stream.post.created',
      data: { streamId: 'macro-wire' },
    });
    expect(jsonLines(results['tree']!.stdout)[0]).toMatchObject({ streamId: 'macro-wire', type: 'stream-post' });
    // Human output of `post` is the post id and nothing else.
    expect(results['post']!.stdout).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}\n$/);
    expect(results['post']!.stderr).toBe('');
    expect(JSON.parse(results['dryRun']!.stdout)).toEqual({
      event: 'add-stream-post',
      data: { streamId: 'crypto-legal', content: 'dry *run*', contentType: 'markdown', idempotencyKey: 'dry-1' },
    });
  });
});

describe('a reader that leaves before the output', () => {
  it('ends --help and a dry run quietly, exit 0, with no stack trace (`stream-posts --help | head -1`)', async () => {
    for (const args of [['--help'], ['post', '--dry-run', '--stream', 'crypto-legal', 'hello']]) {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      // Closed before Node has even started the program: its first write meets a pipe with no reader.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const [code] = (await once(child, 'close')) as [number | null];
      expect({ args, code, stderr }).toEqual({ args, code: 0, stderr: '' });
    }
  });
});

describe('exit 1: the service refused', () => {
  it('names the service’s code and message', async () => {
    const results = await runAll({
      otherStreamsKey: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'macro-wire',
        'wrong stream',
      ],
      otherStreamsKeyRest: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'macro-wire',
        '--via',
        'rest',
        'wrong stream',
      ],
      readerKeyPublishes: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.alice,
        '--stream',
        'macro-wire',
        'readers cannot publish',
      ],
      customTargetMissing: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.whaleAlerts,
        '--stream',
        'whale-alerts',
        'no target',
      ],
      unknownStream: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'no-such-stream',
        'nowhere',
      ],
      unknownStreamRest: [
        'post',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'no-such-stream',
        '--via',
        'rest',
        'nowhere',
      ],
      listenNonexistent: ['listen', '--url', fixture.serve.url, '--api-key', KEYS.alice, '--streams', 'nonexistent'],
      treeNotFollowed: ['tree', '--url', fixture.serve.url, '--api-key', KEYS.bob, '--streams', 'crypto-legal'],
    });
    expectExit(results, 1, {
      otherStreamsKey: /forbidden: .*macro-wire/,
      otherStreamsKeyRest: /403.*forbidden/,
      readerKeyPublishes: /forbidden/,
      customTargetMissing: /invalid-argument: .*customTarget/,
      unknownStream: /not-found: .*no-such-stream/,
      unknownStreamRest: /404.*not-found/,
      listenNonexistent: /not-found: .*nonexistent/,
      treeNotFollowed: /forbidden: .*crypto-legal/,
    });
    for (const result of Object.values(results)) expect(result.stdout).toBe('');
  });
});

describe('exit 2: bad usage or input, nothing sent', () => {
  it('rejects malformed flags and values before connecting', async () => {
    const before = (await adminState(fixture.serve)).posts;
    const big = join(fixture.tmp, 'big.txt');
    await writeFile(big, 'x'.repeat(64 * 1024 + 1));
    const emptyKeyFile = join(fixture.tmp, 'empty.key');
    await writeFile(emptyKeyFile, '\n');
    const key = ['--api-key', KEYS.cryptoLegal];
    const post = ['post', '--url', fixture.serve.url, ...key, '--stream', 'crypto-legal'];
    const results = await runAll({
      schemeFoo: ['post', '--url', 'foo://x', ...key, '--stream', 'crypto-legal', 'hi'],
      notAUrl: ['listen', '--url', 'not a url', ...key],
      urlWithKeyInQuery: ['listen', '--url', `${fixture.serve.url}/v1/ws?apiKey=${KEYS.alice}`],
      missingStream: ['post', '--url', fixture.serve.url, '--api-key', KEYS.alice, 'no stream given'],
      missingContent: ['post', '--url', fixture.serve.url, ...key, '--stream', 'crypto-legal'],
      missingKey: ['post', '--url', fixture.serve.url, '--stream', 'crypto-legal', 'no key'],
      missingKeyListen: ['listen', '--url', fixture.serve.url],
      badReleaseAt: [...post, '--release-at', 'tomorrow', 'hi'],
      releaseAtWithoutZone: [...post, '--release-at', '2030-01-01T10:00:00', 'hi'],
      tooBig: [...post, '--file', big],
      emptyContent: [...post, ''],
      missingFile: [...post, '--file', join(fixture.tmp, 'nope.txt')],
      unknownFlag: [...post, '--bogus', 'hi'],
      lastTooMany: ['listen', '--url', fixture.serve.url, ...key, '--last', '101'],
      countZero: ['listen', '--url', fixture.serve.url, ...key, '--count', '0'],
      badIdleTimeout: ['listen', '--url', fixture.serve.url, ...key, '--idle-timeout', 'soon'],
      badRegex: ['listen', '--url', fixture.serve.url, ...key, '--match', '(unclosed'],
      badContentType: [...post, '--content-type', 'html', 'hi'],
      markdownAndRawtext: [...post, '--markdown', '--content-type', 'rawtext', 'hi'],
      unknownProfile: ['listen', '--url', fixture.serve.url, ...key, '--profile', 'nobody'],
      missingKeyFile: ['listen', '--url', fixture.serve.url, '--api-key-file', join(fixture.tmp, 'no-such.key')],
      emptyKeyFile: ['listen', '--url', fixture.serve.url, '--api-key-file', emptyKeyFile],
      twoKeys: ['listen', '--url', fixture.serve.url, ...key, '--api-key-file', emptyKeyFile],
      unknownCommand: ['subscribe'],
    });
    // A second batch, so that no more processes start at once than the machine takes.
    Object.assign(
      results,
      await runAll({
        helpUnknownCommand: ['help', 'subscribe'],
        unknownShell: ['completion', 'tcsh'],
        historyLimit: ['history', '--url', fixture.serve.url, ...key, '--limit', '0'],
        streamsNoKey: ['streams', '--url', fixture.serve.url],
      }),
    );
    expectExit(results, 2, {
      schemeFoo: /^stream-posts: --url must be a ws:\/\/, wss:\/\/, http:\/\/ or https:\/\/ URL, got "foo:\/\/x"\n/,
      notAUrl: /--url/,
      urlWithKeyInQuery: /--url/,
      missingStream: /--stream/,
      missingContent: /content/,
      missingKey: /API key/i,
      missingKeyListen: /API key/i,
      badReleaseAt: /release/i,
      releaseAtWithoutZone: /zone/i,
      tooBig: /65536|64 KiB/,
      emptyContent: /content/,
      missingFile: /nope\.txt/,
      unknownFlag: /--bogus/,
      lastTooMany: /--last/,
      countZero: /--count/,
      badIdleTimeout: /--idle-timeout/,
      badRegex: /--match|regular expression/,
      badContentType: /--content-type|html/,
      markdownAndRawtext: /--markdown/,
      unknownProfile: /nobody/,
      missingKeyFile: /no-such\.key/,
      emptyKeyFile: /empty/,
      twoKeys: /--api-key/,
      unknownCommand: /^stream-posts: unknown command 'subscribe'\n/,
      helpUnknownCommand: /^stream-posts: unknown command 'subscribe'\n\(run with --help for usage\)\n$/,
      unknownShell: /^stream-posts: command-argument value 'tcsh' is invalid for argument 'shell'/,
      historyLimit: /^stream-posts: option '--limit <n>' argument '0' is invalid/,
      streamsNoKey: /^stream-posts: no API key/,
    });
    for (const result of Object.values(results)) expect(result.stdout).toBe('');
    // The environment's URL is checked like the flag's.
    const badEnvUrl = await runToEnd(['listen', ...key], { env: { STREAM_POSTS_URL: 'foo://x' } });
    expect(badEnvUrl.code).toBe(2);
    expect(badEnvUrl.stderr).toContain('foo://x');
    expect((await adminState(fixture.serve)).posts).toBe(before);
  });
});

describe('exit 3: cannot connect or not authorized', () => {
  it('connection refused, a refused key, and a wrong path (HTTP 404 on the upgrade)', async () => {
    const wrongKey = 'sp_wrong_key_0123456789';
    const results = await runAll(
      {
        refusedListen: ['listen', '--url', deadUrl, '--api-key', KEYS.alice],
        refusedTree: ['tree', '--url', deadUrl, '--api-key', KEYS.alice, '--json'],
        refusedPost: ['post', '--url', deadUrl, '--api-key', KEYS.cryptoLegal, '--stream', 'crypto-legal', 'hi'],
        refusedRest: [
          'post',
          '--url',
          deadUrl,
          '--api-key',
          KEYS.cryptoLegal,
          '--stream',
          'crypto-legal',
          '--via',
          'rest',
          'hi',
        ],
        refusedBatch: ['post', '--batch', '--url', deadUrl, '--api-key', KEYS.cryptoLegal, '--stream', 'crypto-legal'],
        wrongKeyListen: ['listen', '--url', fixture.serve.url, '--api-key', wrongKey],
        wrongKeyTreeQuery: ['tree', '--url', fixture.serve.url, '--api-key', wrongKey, '--auth-query'],
        wrongKeyPost: ['post', '--url', fixture.serve.url, '--api-key', wrongKey, '--stream', 'crypto-legal', 'hi'],
        wrongKeyRest: [
          'post',
          '--url',
          fixture.serve.url,
          '--api-key',
          wrongKey,
          '--stream',
          'crypto-legal',
          '--via',
          'rest',
          'hi',
        ],
        wrongPathListen: ['listen', '--url', `${fixture.serve.url}/nope`, '--api-key', KEYS.alice],
        wrongPathPost: [
          'post',
          '--url',
          `${fixture.serve.url}/nope`,
          '--api-key',
          KEYS.cryptoLegal,
          '--stream',
          'crypto-legal',
          'hi',
        ],
      },
      { stdin: `${JSON.stringify({ content: 'batch' })}\n` },
    );
    expectExit(results, 3, {
      refusedListen: /refused/,
      refusedTree: /refused/,
      refusedPost: /refused/,
      refusedRest: /refused/,
      refusedBatch: /refused/,
      wrongKeyListen: /Invalid secret key|unauthorized/,
      wrongKeyTreeQuery: /Invalid secret key|unauthorized/,
      wrongKeyPost: /Invalid secret key|unauthorized/,
      wrongKeyRest: /401/,
      wrongPathListen: /404/,
      wrongPathPost: /404/,
    });
    for (const [name, result] of Object.entries(results)) {
      expect(result.stdout, name).toBe('');
      expect(result.stderr, name).not.toContain(wrongKey);
    }
  });
});

describe('keys never reach the output', () => {
  it('not with -v, not in the query form, not when refused', async () => {
    const refusedKey = 'sp_refused_key_abcdef123';
    const results = await runAll({
      wrongStream: [
        'post',
        '-v',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'whale-alerts',
        '--custom-target',
        'BTC',
        'x',
      ],
      wrongStreamQuery: [
        'post',
        '-v',
        '--auth-query',
        '--url',
        fixture.serve.url,
        '--api-key',
        KEYS.cryptoLegal,
        '--stream',
        'macro-wire',
        'x',
      ],
      refusedQuery: ['listen', '-v', '--auth-query', '--url', fixture.serve.url, '--api-key', refusedKey],
      refusedQueryPath: ['listen', '-v', '--auth-query', '--url', `${fixture.serve.url}/nope`, '--api-key', refusedKey],
      refusedHeader: [
        'post',
        '-v',
        '--url',
        fixture.serve.url,
        '--api-key',
        refusedKey,
        '--stream',
        'crypto-legal',
        'x',
      ],
      refusedQueryDead: [
        'post',
        '-v',
        '--auth-query',
        '--url',
        deadUrl,
        '--api-key',
        refusedKey,
        '--stream',
        'crypto-legal',
        'x',
      ],
      keyInUrl: ['listen', '-v', '--url', `${fixture.serve.url}/v1/ws?apiKey=${refusedKey}`],
    });
    for (const [name, result] of Object.entries(results)) {
      expect(result.code, `${name}: ${result.stderr}`).not.toBe(0);
      expectCleanError(result.stderr, [...Object.values(KEYS), refusedKey]);
      expect(result.stdout, name).not.toContain(refusedKey);
      expect(result.stdout, name).not.toContain(KEYS.cryptoLegal);
    }
  });
});

describe('a certificate the system does not trust', () => {
  it('is exit 3 naming NODE_EXTRA_CA_CERTS, over the WebSocket and REST; with it, the same commands work', async () => {
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true },
        { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
      ],
    });
    const cert = join(fixture.tmp, 'cert.pem');
    const certKey = join(fixture.tmp, 'key.pem');
    await writeFile(cert, pems.cert);
    await writeFile(certKey, pems.private);
    const secure = await startServe(['--tls-cert', cert, '--tls-key', certKey]);
    expect(secure.url).toMatch(/^wss:\/\//);
    const listen = [
      'listen',
      '--url',
      secure.url,
      '--api-key',
      KEYS.alice,
      '--last',
      '1',
      '--idle-timeout',
      '1s',
      '-q',
    ];
    const streams = ['streams', '--url', secure.url, '--api-key', KEYS.alice, '--ids'];
    const [untrustedListen, untrustedStreams, trustedListen, trustedStreams] = await Promise.all([
      runToEnd(listen),
      runToEnd(streams),
      runToEnd(listen, { env: { NODE_EXTRA_CA_CERTS: cert } }),
      runToEnd(streams, { env: { NODE_EXTRA_CA_CERTS: cert } }),
    ]);
    expectExit({ untrustedListen, untrustedStreams }, 3, {
      untrustedListen:
        /self-signed certificate: to trust the service's own certificate \(say a serve --tls-cert one\), run with NODE_EXTRA_CA_CERTS=cert\.pem/,
      untrustedStreams:
        /self-signed certificate: to trust the service's own certificate \(say a serve --tls-cert one\), run with NODE_EXTRA_CA_CERTS=cert\.pem/,
    });
    expect(trustedListen.code, trustedListen.stderr).toBe(0);
    expect(trustedListen.stdout).toMatch(/^\d\d:\d\d:\d\d /);
    expect(trustedStreams).toMatchObject({ code: 0, stdout: 'crypto-legal\nmacro-wire\nwhale-alerts\n' });
  });
});
