import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANSI, expectCleanError, jsonLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { inMs } from '../support/fixtures.js';
import { scriptedService } from '../support/hostile.js';
import { KEYS, publishToStream } from '../support/harness.js';
import { startServe, cliFixture } from '../support/serve.js';

const fixture = cliFixture('streams');

const as = (key: string, ...args: string[]) => [...args, '--url', fixture.serve.url, '--api-key', key];

describe('stream-posts streams', () => {
  it("lists the key's streams: owner, custom targets with the user's own marked, where the key publishes", async () => {
    const [alice, bob, macroWire] = await Promise.all([
      runInProcess(as(KEYS.alice, 'streams')),
      runInProcess(as(KEYS.bob, 'streams')),
      runInProcess(as(KEYS.macroWire, 'streams')),
    ]);
    for (const result of [alice, bob, macroWire]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe('');
    }
    expect(alice.stdout).toBe(
      [
        'ID            NAME                  OWNER     FOLLOWING  FEATURED  TARGETS        PUBLISH  DESCRIPTION',
        'crypto-legal  Crypto Legal Updates  newsdesk  yes        yes       -              no       Court filings, rulings and enforcement actions that move cr…',
        'macro-wire    Macro Wire            newsdesk  yes        -         -              no       Macro data releases the second they print.',
        'whale-alerts  Whale Alerts          newsdesk  yes        -         BTC* ETH* SOL  no       Large on-chain transfers; pick the coins you want.',
        '(* a target you selected: you receive its posts)',
        '',
      ].join('\n'),
    );
    expect(bob.stdout).toContain('whale-alerts  Whale Alerts  newsdesk  yes        -         BTC ETH SOL*  no ');
    // A stream key acts as the owner: no selection of its own, and it publishes to its stream only.
    expect(macroWire.stdout.split('\n').filter((line) => /\byes {6}\S/.test(line))).toEqual([
      'macro-wire    Macro Wire            newsdesk  yes        -         -            yes      Macro data releases the second they print.',
    ]);
  });

  it('--json gives one stream per line; --ids one id per line', async () => {
    const [json, ids] = await Promise.all([
      runInProcess(as(KEYS.macroWire, 'streams', '--json')),
      runInProcess(as(KEYS.bob, 'streams', '--ids')),
    ]);
    expect(json.code, json.stderr).toBe(0);
    // The stream as the service gives it (PROTOCOL.md B6), fields the table leaves out included.
    expect(jsonLines(json.stdout)).toEqual([
      expect.objectContaining({
        id: 'crypto-legal',
        name: 'Crypto Legal Updates',
        custom: false,
        customTargets: [],
        owner: 'newsdesk',
        publish: false,
        isFeatured: true,
        following: true,
        description: 'Court filings, rulings and enforcement actions that move crypto markets.',
      }),
      expect.objectContaining({
        id: 'macro-wire',
        name: 'Macro Wire',
        custom: false,
        owner: 'newsdesk',
        publish: true,
      }),
      expect.objectContaining({
        id: 'whale-alerts',
        name: 'Whale Alerts',
        custom: true,
        customTargets: ['BTC', 'ETH', 'SOL'],
        owner: 'newsdesk',
        publish: false,
      }),
    ]);
    expect(ids).toMatchObject({ code: 0, stdout: 'macro-wire\nwhale-alerts\n', stderr: '' });
  });

  it('sanitizes what the service names: no escape or bidi character reaches the terminal', async () => {
    const seed = join(fixture.tmp, 'hostile-seed.json');
    await writeFile(
      seed,
      JSON.stringify({
        users: [{ id: 'eve', name: 'Eve', readerKey: 'sp_test_reader_eve', follows: ['evil'] }],
        streams: [
          {
            id: 'evil',
            name: 'Evil \u001b]0;owned\u0007\u202eName\u001b[31m',
            owner: 'eve',
            key: 'sp_test_stream_evil',
            custom: true,
            customTargets: ['T\u001b[2J'],
          },
        ],
      }),
    );
    const hostile = await startServe(['--seed', seed]);
    const [table, json] = await Promise.all([
      runInProcess(['streams', '--url', hostile.url, '--api-key', 'sp_test_reader_eve']),
      runInProcess(['streams', '--url', hostile.url, '--api-key', 'sp_test_reader_eve', '--json']),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(table.stdout).toContain('evil  Evil ]0;owned Name [31m  eve    yes        -         T [2J    no');
    expect(json.stdout).toContain('\\u202e');
    expect(jsonLines(json.stdout)[0].name).toBe('Evil \u001b]0;owned\u0007\u202eName\u001b[31m');
  });

  it('exit codes: no key 2, a refused key 3 (never printed), an unreachable service 3', async () => {
    const wrongKey = 'sp_wrong_key_for_streams_1';
    const [noKey, refused, unreachable] = await Promise.all([
      runInProcess(['streams', '--url', fixture.serve.url]),
      runInProcess(as(wrongKey, 'streams')),
      runInProcess(['streams', '--url', 'ws://127.0.0.1:1', '--api-key', KEYS.alice]),
    ]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/^stream-posts: no API key: give --api-key-file FILE/);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toBe(
      'stream-posts: the service refused the key from --api-key: HTTP 401: Invalid secret key\n',
    );
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(
      /^stream-posts: cannot reach the service: http:\/\/127\.0\.0\.1:1\/v1\/streams\?limit=50: /,
    );
    for (const result of [noKey, refused, unreachable]) {
      expect(result.stdout).toBe('');
      expectCleanError(result.stderr, [...Object.values(KEYS), wrongKey]);
    }
  });
});

describe('stream-posts streams on a service without GET /v1/streams', () => {
  it("falls back to the ids the WebSocket's connected event names, and says what it does not know", async () => {
    // As the hosted service may: REST has the publish route only, `connected` lists the streams.
    const { url } = await scriptedService(
      (ws, request) => {
        const streamKey = request.headers['x-api-key'] === 'sp_hosted_stream_key';
        ws.send(
          JSON.stringify({
            event: 'connected',
            data: {
              message: 'connected',
              userId: 'u',
              streams: ['alpha', 'beta'],
              ...(streamKey ? { streamId: 'beta' } : {}),
            },
          }),
        );
      },
      { onRequest: (_request, response) => response.writeHead(404).end('Not Found') },
    );
    const [table, json, reader, verbose] = await Promise.all([
      runInProcess(['streams', '--url', url, '--api-key', 'sp_hosted_stream_key']),
      runInProcess(['streams', '--url', url, '--api-key', 'sp_hosted_stream_key', '--json']),
      runInProcess(['streams', '--url', url, '--api-key', 'sp_hosted_reader_key', '--json']),
      runInProcess(['streams', '--url', url, '--api-key', 'sp_hosted_reader_key', '--ids', '-v']),
    ]);
    for (const result of [table, json, reader, verbose]) expect(result.code, result.stderr).toBe(0);
    expect(table.stdout).toBe(
      [
        // No owner for any stream: no OWNER column of question marks.
        'ID     NAME  TARGETS  PUBLISH',
        'alpha  ?     ?        no',
        'beta   ?     ?        yes',
        '',
      ].join('\n'),
    );
    expect(jsonLines(json.stdout)).toEqual([
      { id: 'alpha', publish: false },
      { id: 'beta', publish: true },
    ]);
    expect(jsonLines(reader.stdout)).toEqual([{ id: 'alpha' }, { id: 'beta' }]);
    expect(verbose.stdout).toBe('alpha\nbeta\n');
    expect(verbose.stderr).toBe('stream-posts: no GET /v1/streams there: asking the WebSocket instead\n');
  });
});

describe('stream-posts history', () => {
  it('prints the recent posts oldest first exactly as listen --last prints them, text and --json', async () => {
    // A stream of its own for this test: the seed's posts and its own, nothing published by another test.
    const first = await publishToStream(fixture.serve.url, 'crypto-legal', 'history one: a plain post');
    const hidden = await publishToStream(fixture.serve.url, 'crypto-legal', 'history two: hidden', {
      releaseAt: inMs(3_600_000),
    });
    const third = await publishToStream(fixture.serve.url, 'crypto-legal', 'history three: **markdown** $BTC', {
      contentType: 'markdown',
    });
    const args = (...more: string[]) => as(KEYS.alice, ...more, '--streams', 'crypto-legal');
    const [text, json, listenText, listenJson] = await Promise.all([
      runInProcess(args('history', '--limit', '3')),
      runInProcess(args('history', '--limit', '3', '--json')),
      runInProcess(args('listen', '--last', '3', '--idle-timeout', '1s', '-q')),
      runInProcess(args('listen', '--last', '3', '--idle-timeout', '1s', '-q', '--json')),
    ]);
    for (const result of [text, json, listenText, listenJson]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe('');
    }
    const lines = jsonLines(json.stdout);
    expect(lines.map((line) => [line.event, line.data.id, line.data.text])).toEqual([
      ['stream.post.created', first.post.id, 'history one: a plain post'],
      ['stream.post.created', hidden.post.id, null],
      ['stream.post.created', third.post.id, 'history three: **markdown** $BTC'],
    ]);
    expect(json.stdout).toBe(listenJson.stdout);
    expect(text.stdout).toBe(listenText.stdout);
    expect(text.stdout).toContain(`[hidden until ${hidden.post.releaseAt}]`);
    expect(text.stdout).not.toMatch(ANSI);
  });

  it('without --streams reads every stream of the key, --limit posts of each, merged by time', async () => {
    const macro = await publishToStream(fixture.serve.url, 'macro-wire', 'history merge: macro');
    const legal = await publishToStream(fixture.serve.url, 'crypto-legal', 'history merge: legal');
    const result = await runInProcess(as(KEYS.bob, 'history', '--limit', '1', '--json'));
    expect(result.code, result.stderr).toBe(0);
    const posts = jsonLines(result.stdout).map((line) => line.data);
    // bob follows macro-wire and whale-alerts (his target SOL), not crypto-legal.
    expect(posts.map((post) => post.streamId)).toEqual(['whale-alerts', 'macro-wire']);
    expect(posts[1].id).toBe(macro.post.id);
    expect(posts.map((post) => post.id)).not.toContain(legal.post.id);
    expect(posts[0]).toMatchObject({ customTarget: 'SOL' });
  });

  it('--json escapes what a terminal acts on, as listen --json does; text output removes it', async () => {
    const hostile = 'C1 \u009b31m, bidi \u202eevil, zero-width \u200b, escape \u001b[2J end';
    const sent = await publishToStream(fixture.serve.url, 'whale-alerts', hostile, { customTarget: 'BTC' });
    const args = as(KEYS.alice, 'history', '--streams', 'whale-alerts', '--limit', '1');
    const [json, text] = await Promise.all([runInProcess([...args, '--json']), runInProcess(args)]);
    expect(json.stdout).toContain('\\u009b31m, bidi \\u202eevil, zero-width \\u200b, escape \\u001b[2J end');
    expect(jsonLines(json.stdout)[0].data).toEqual(sent.post);
    expect(text.stdout).not.toMatch(/[\u001b\u009b]/);
  });

  it('exit codes: a bad --limit is 2 naming the flag, a stream not followed is 1 with the code, a refused key 3', async () => {
    const [zero, tooMany, notANumber, notFollowed, unknown, refused] = await Promise.all([
      runInProcess(as(KEYS.alice, 'history', '--limit', '0')),
      runInProcess(as(KEYS.alice, 'history', '--limit', '101')),
      runInProcess(as(KEYS.alice, 'history', '--limit', 'ten')),
      runInProcess(as(KEYS.bob, 'history', '--streams', 'crypto-legal')),
      runInProcess(as(KEYS.alice, 'history', '--streams', 'no-such-stream')),
      runInProcess(as('sp_wrong_key_for_history', 'history')),
    ]);
    for (const usage of [zero, tooMany, notANumber]) {
      expect(usage.code).toBe(2);
      expect(usage.stderr).toMatch(/^stream-posts: option '--limit <n>' argument '.*' is invalid/);
    }
    expect(tooMany.stderr).toContain('expected 1 to 100');
    expect(notFollowed.code).toBe(1);
    expect(notFollowed.stderr).toMatch(/^stream-posts: forbidden: .*crypto-legal/);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('stream-posts: not-found: no stream with id "no-such-stream"\n');
    expect(refused.code).toBe(3);
    for (const result of [zero, tooMany, notANumber, notFollowed, unknown, refused]) {
      expect(result.stdout).toBe('');
      expectCleanError(result.stderr, [...Object.values(KEYS), 'sp_wrong_key_for_history']);
    }
  });
});
