import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { client, ensureBuilt, finish } from '../support/cli.js';
import { jsonLines } from '../support/cli-output.js';
import { inProcess } from '../support/in-process.js';
import { wirePost } from '../support/fixtures.js';
import { scriptedService, type ScriptedService } from '../support/hostile.js';

/**
 * A server that speaks just enough of the protocol to be believed, and puts
 * terminal control sequences in every string the client might print: the
 * window title (OSC 0), the clipboard (OSC 52), a screen clear (CSI, also as
 * the C1 byte 0x9B), a forged OSC 8 link, bidi overrides and zero-width characters.
 */
const HOSTILE =
  'A\u001B]0;PWNED\u0007\u001B]52;c;cHduZWQ=\u0007\u001B[2J\u009B2J\u009D0;x\u009C\u001B]8;;https://evil.example\u0007click\u001B]8;;\u0007\u202Eevil\u2066\u200B\uFEFF-end\r\nZ';
/** What a reader sees of it once sanitized: the words stay, each removed character a space between them. */
const SHOWN = /A \]0;PWNED \]52;c;cHduZWQ= \[2J 2J 0;x \]8;;https:\/\/evil\.example click \]8;; evil -end Z/;
// A close reason is at most 123 bytes.
const HOSTILE_REASON = '\u001B]0;PWNED\u0007\u001B[2J\u009B2J\u202Ebye\u200B-now';
const REASON_SHOWN = ']0;PWNED [2J 2J bye -now';

// Colours (SGR) may reach the terminal, and on stdout OSC 8 links; nothing else that acts on it.
const SGR = /\u001B\[[0-9;]*m/g;
const OSC8 = /\u001B\]8;;[^\u0000-\u001F\u007F-\u009F]*\u0007/g;
const ACTS_ON_TERMINAL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;
const BIDI_OR_ZERO_WIDTH = /[\u061C\u200B-\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/;

function expectClean(out: { stdout: string; stderr: string }): void {
  const stdout = out.stdout.replace(SGR, '').replace(OSC8, '');
  const stderr = out.stderr.replace(SGR, '');
  expect(stdout, 'stdout').not.toMatch(ACTS_ON_TERMINAL);
  expect(stderr, 'stderr').not.toMatch(ACTS_ON_TERMINAL);
  expect(stderr, 'stderr').not.toMatch(BIDI_OR_ZERO_WIDTH);
}

/** OSC 8 targets on stdout: links the reader's terminal would open. */
function linkTargets(stdout: string): string[] {
  return [...stdout.matchAll(/\u001B\]8;;([^\u0007]*)\u0007/g)]
    .map((match) => match[1]!)
    .filter((target) => target !== '');
}

const visible = (text: string): string => text.replace(OSC8, '').replace(SGR, '');

const send = (ws: WebSocket, event: string, data: unknown, requestId?: string) =>
  ws.send(JSON.stringify({ event, data, ...(requestId ? { requestId } : {}) }));

/**
 * The service side of a subscription: `connected`, a `sub_ack` for the
 * subscribe command (with `streamIds`, and no history to follow), then
 * `afterSubscribed`.
 */
function subscriber(streamIds: string[], afterSubscribed: (ws: WebSocket) => void): (ws: WebSocket) => void {
  return (ws) => {
    send(ws, 'connected', { message: 'connected', userId: 'u', streams: streamIds });
    let acks = 0;
    ws.on('message', (data) => {
      const command = JSON.parse(String(data));
      send(
        ws,
        'sub_ack',
        { command: command.event, streamIds, lastPosts: command.data.lastPosts, history: 0 },
        command.requestId,
      );
      acks += 1;
      if (acks === 1) afterSubscribed(ws);
    });
  };
}

const listenArgs = (server: ScriptedService, command = 'listen', flags: string[] = []) => [
  command,
  '--url',
  server.url,
  '--api-key',
  'k',
  '--no-reconnect',
  ...flags,
];

/** Colour and hyperlinks forced on, so the styled output paths run (nothing here is a terminal). */
const COLOUR = { env: { NO_COLOR: undefined, FORCE_COLOR: '1', FORCE_HYPERLINK: '1' } };

beforeAll(() => ensureBuilt());

describe('nothing a server sends can control the terminal', () => {
  it('the unauthorized error message and the close reason', async () => {
    const server = await scriptedService((ws) => {
      send(ws, 'error', { code: 'unauthorized', message: HOSTILE });
      ws.close(4401, HOSTILE_REASON);
    });
    const result = await finish(inProcess(listenArgs(server)));
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(SHOWN);
    expectClean(result);

    const closeOnly = await scriptedService((ws) => ws.close(4401, HOSTILE_REASON));
    const closed = await finish(inProcess(listenArgs(closeOnly), COLOUR));
    expect(closed.code).toBe(3);
    expect(closed.stderr).toContain(REASON_SHOWN);
    expectClean(closed);
  });

  it('a close reason, when the connection ends and when it is retried', async () => {
    const server = await scriptedService(subscriber(['wire'], (ws) => ws.close(4000, HOSTILE_REASON)));
    const ended = await finish(inProcess(listenArgs(server)));
    expect(ended.stderr).toContain(REASON_SHOWN);
    expectClean(ended);

    const retrying = inProcess(['listen', '--url', server.url, '--api-key', 'k'], COLOUR);
    await retrying.waitFor(
      (out) => out.stderr.includes(`reconnecting`) && out.stderr.includes(REASON_SHOWN),
      'the reconnecting line',
    );
    expectClean(retrying);
  });

  it('the error code and message of a refused subscription', async () => {
    const server = await scriptedService((ws) => {
      send(ws, 'connected', { message: 'connected', userId: 'u', streams: [] });
      ws.on('message', (data) =>
        send(
          ws,
          'error',
          { code: HOSTILE, message: HOSTILE, command: 'on-stream-post' },
          JSON.parse(String(data)).requestId,
        ),
      );
    });
    const result = await finish(inProcess(listenArgs(server), COLOUR));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`refused the subscription: ${SHOWN.source}: ${SHOWN.source}`));
    expectClean(result);
  });

  it('stream ids in "subscribed:", and a stream id shown for a blank stream name', async () => {
    const server = await scriptedService(
      subscriber([HOSTILE], (ws) =>
        send(ws, 'stream.post.created', wirePost({ streamId: HOSTILE, streamName: ' \u200B ' })),
      ),
    );
    for (const options of [{}, COLOUR]) {
      const result = await finish(inProcess(listenArgs(server, 'listen', ['--count', '1']), options));
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(new RegExp(`subscribed: ${SHOWN.source}`));
      const header = visible(result.stdout).split('\n')[0]!;
      expect(header).toMatch(SHOWN);
      expect(header).not.toMatch(BIDI_OR_ZERO_WIDTH);
      expect(result.stdout).toContain('hello');
      expectClean(result);
    }
  });

  it('the HTTP status text of a refused upgrade', async () => {
    // Bytes 0x80-0xFF are allowed in a reason phrase, and read as Latin-1: 0x9B is CSI, 0x9D OSC.
    const server = await scriptedService(() => {}, {
      refuse: (socket) =>
        socket.end(
          Buffer.concat([
            Buffer.from('HTTP/1.1 403 Go away '),
            Buffer.from([0x9d]),
            Buffer.from('0;PWNED'),
            Buffer.from([0x9c, 0x9b]),
            Buffer.from('2J now\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'),
          ]),
        ),
    });
    const result = await finish(inProcess(listenArgs(server), COLOUR));
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('HTTP 403 Go away 0;PWNED 2J now');
    expectClean(result);
  });

  it('the post id `post` prints, and the error of a refused post', async () => {
    const reply = (answer: (ws: WebSocket, requestId: string) => void) =>
      scriptedService((ws) => {
        send(ws, 'connected', { message: 'connected', userId: 'u', streams: ['wire'], streamId: 'wire' });
        ws.on('message', (data) => answer(ws, JSON.parse(String(data)).requestId));
      });
    const postArgs = (server: ScriptedService, flags: string[] = []) => [
      'post',
      '--url',
      server.url,
      '--api-key',
      'k',
      '--stream',
      'wire',
      ...flags,
      'hello',
    ];

    const acked = await reply((ws, requestId) =>
      send(ws, 'ack', { post: wirePost({ id: HOSTILE }), duplicate: false }, requestId),
    );
    const printed = await finish(inProcess(postArgs(acked), COLOUR));
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(new RegExp(`^${SHOWN.source}\\n$`));
    expectClean(printed);
    const json = await finish(inProcess(postArgs(acked, ['--json'])));
    expect(json.stdout).not.toMatch(/[\u0080-\u009F\u202E\u2066\u200B]/);
    expect(jsonLines(json.stdout)[0].post.id).toBe(HOSTILE);

    const refused = await reply((ws, requestId) =>
      send(ws, 'error', { code: HOSTILE, message: HOSTILE, command: 'add-stream-post' }, requestId),
    );
    const failed = await finish(inProcess(postArgs(refused), COLOUR));
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(new RegExp(`${SHOWN.source}: ${SHOWN.source}`));
    expectClean(failed);

    // --batch writes one JSON result line per input line, with the service's words in it.
    const batch = await finish(
      inProcess(['post', '--batch', '--url', refused.url, '--api-key', 'k', '--stream', 'wire'], {
        stdin: '{"content":"a"}\n',
      }),
    );
    expect(batch.code).toBe(1);
    expect(batch.stdout).not.toMatch(/[\u0080-\u009F\u202E\u2066\u200B]/);
    expect(JSON.stringify(jsonLines(batch.stdout))).toContain(JSON.stringify(HOSTILE).slice(1, -1));
    expectClean(batch);
  });

  it('--json writes each message re-serialized on one line, C1 controls and line separators escaped', async () => {
    const text = `a\u009B2J\u0085b\u2028c\u2029d\u202Ee`;
    const envelope = { event: 'stream.post.created', data: wirePost({ text, streamName: 'W\u009D0;x\u009C' }) };
    const item = {
      _id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
      title: 'W',
      body: text,
      source: 'W',
      time: 1795262400000,
      type: 'stream-post',
      streamId: 'wire',
      hidden: false,
    };
    // Pretty-printed over several lines, as a server may: the client must not pass its text through.
    const server = await scriptedService(subscriber(['wire'], (ws) => ws.send(JSON.stringify(envelope, null, 2))));
    const treeServer = await scriptedService(subscriber(['wire'], (ws) => ws.send(JSON.stringify(item, null, 2))));
    for (const [target, command, expected] of [
      [server, 'listen', envelope],
      [treeServer, 'tree', item],
    ] as const) {
      const result = await finish(inProcess(listenArgs(target, command, ['--json', '--count', '1'])));
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).not.toMatch(/[\u0080-\u009F\u2028\u2029\u202E]/);
      const lines = jsonLines(result.stdout);
      expect(lines).toEqual([expected]);
    }
  });

  it('a markdown link whose text is another URL shows where it really goes, as a hyperlink too', async () => {
    const server = await scriptedService(
      subscriber(['wire'], (ws) =>
        send(
          ws,
          'stream.post.created',
          wirePost({ contentType: 'markdown', text: 'see [https://good.example](https://evil.example/steal)' }),
        ),
      ),
    );
    const result = await finish(inProcess(listenArgs(server, 'listen', ['--count', '1']), COLOUR));
    expect(result.code, result.stderr).toBe(0);
    expect(linkTargets(result.stdout)).toEqual(['https://evil.example/steal', 'https://evil.example/steal']);
    expect(visible(result.stdout)).toContain('https://good.example (https://evil.example/steal)');
    expectClean(result);
  });
});

describe('no post can crash or stall rendering', () => {
  it('deeply nested and emphasis-heavy markdown shows as plain text under a note; the next post still renders', async () => {
    const nested = `${'>'.repeat(2000)} deep`;
    const emphasis = '*a _'.repeat(16_000);
    const server = await scriptedService(
      subscriber(['wire'], (ws) => {
        // Each as a post and as a tree item: listen shows the one, tree the other.
        for (const [index, text] of [nested, emphasis, '**after**'].entries()) {
          const id = `01JWEX3G5B1P2FMXKPJAHEMTT${index}`;
          send(ws, 'stream.post.created', wirePost({ id, contentType: 'markdown', text }));
          ws.send(
            JSON.stringify({
              _id: id,
              title: 'Wire',
              body: text,
              source: 'Wire',
              time: 1795262400000,
              contentType: 'markdown',
              streamId: 'wire',
              hidden: false,
            }),
          );
        }
      }),
    );
    for (const command of ['listen', 'tree']) {
      const result = await finish(inProcess(listenArgs(server, command, ['--count', '3']), COLOUR));
      expect(result.code, result.stderr).toBe(0);
      const shown = visible(result.stdout);
      // Wrapped to the width like any text: the word of 2,000 `>` stays whole.
      expect(shown).toContain(`(shown as plain text: too deeply nested to render)\n${'>'.repeat(2000)}\ndeep`);
      expect(shown).toContain(`(shown as plain text: too slow to render)\n*a _*a _`);
      expect(result.stdout).toContain('\u001B[1mafter\u001B[22m');
      expectClean(result);
    }
  });
});

/** The resident memory of a running process, in MiB (Linux). */
function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) / 1024;
}

/**
 * Sends `count` frames as fast as the client reads them (the next chunk once the last
 * is written), calling `sample` after each chunk, then `after`.
 */
function flood(ws: WebSocket, count: number, frame: (i: number) => string, sample: () => void, after: () => void) {
  let i = 0;
  const chunk = () => {
    if (ws.readyState !== ws.OPEN) return;
    sample();
    if (i === count) return after();
    const end = Math.min(count, i + 50);
    while (i < end - 1) ws.send(frame(i++));
    ws.send(frame(i++), chunk);
  };
  chunk();
}

/** An old post (created in 2020, before any subscribe) on stream `wire`, as an envelope or a tree item. */
function oldPost(i: number, tree: boolean, id = `old-${String(i).padStart(8, '0')}`): string {
  const time = Date.UTC(2020, 0, 1) + i;
  return tree
    ? JSON.stringify({
        _id: id,
        title: 'Wire',
        body: `p${i}`,
        en: `p${i}`,
        source: 'Wire',
        time,
        type: 'stream-post',
        contentType: 'rawtext',
        streamId: 'wire',
        hidden: false,
      })
    : JSON.stringify({
        event: 'stream.post.created',
        data: wirePost({ id, text: `p${i}`, createdAt: new Date(time).toISOString() }),
      });
}

// The bound of the resident memory of `listen` and `tree` under each flood below. The CLI
// idles at about 55 MiB; under the floods it peaked at 65 MiB (history) and 96-102 MiB
// (1 MiB ids, parsed and dropped); what they would make it hold otherwise (every post,
// every id) passes 150 MiB within seconds.
const RSS_BOUND_MIB = 150;

describe('a hostile service cannot make the client hold memory without bound', () => {
  it.each([
    ['listen', -5],
    ['tree', 1e9],
  ])(
    '%s: a sub_ack.history of %s is ignored; the creation times end the history and 20,000 posts flow through',
    async (command, history) => {
      const tree = command === 'tree';
      const count = 20_000;
      let pid = 0;
      let most = 0;
      const sample = () => {
        if (pid !== 0) most = Math.max(most, rssMiB(pid));
      };
      const server = await scriptedService((ws) => {
        send(ws, 'connected', { message: 'connected', userId: 'u', streams: ['wire'] });
        ws.once('message', (data) => {
          const command = JSON.parse(String(data));
          send(
            ws,
            'sub_ack',
            { command: command.event, streamIds: ['wire'], lastPosts: 100, history },
            command.requestId,
          );
          flood(
            ws,
            count,
            (i) => oldPost(i, tree),
            sample,
            () => {},
          );
        });
      });
      // Its own process: the memory measured is the command's alone.
      const cli = client(listenArgs(server, command, ['--json']));
      pid = cli.child.pid!;
      // The first 100 (at most what was asked for) are history, not shown; every later one is live.
      await cli.waitFor(
        (out) => out.stdout.split('\n').length - 1 >= count - 100,
        `${count - 100} live posts`,
        120_000,
      );
      sample();
      expect(most, `most resident memory of ${command}, MiB`).toBeLessThan(RSS_BOUND_MIB);
      expect(cli.lines).toHaveLength(count - 100);
    },
  );

  it('ids over 128 bytes are malformed: 300 posts with 1 MiB ids are dropped, memory stays bounded, the next post is shown', async () => {
    let pid = 0;
    let most = 0;
    const sample = () => {
      if (pid !== 0) most = Math.max(most, rssMiB(pid));
    };
    const huge = (i: number) => `${String(i).padStart(8, '0')}${'x'.repeat(1024 * 1024)}`;
    const server = await scriptedService(
      subscriber(['wire'], (ws) =>
        flood(
          ws,
          300,
          (i) => JSON.stringify({ event: 'stream.post.created', data: wirePost({ id: huge(i), text: `huge ${i}` }) }),
          sample,
          () =>
            send(
              ws,
              'stream.post.created',
              wirePost({ id: 'after-the-flood', text: 'after', createdAt: new Date().toISOString() }),
            ),
        ),
      ),
    );
    // Its own process: the memory measured is the command's alone.
    const cli = client(listenArgs(server, 'listen', ['--json']));
    pid = cli.child.pid!;
    await cli.waitFor((out) => out.stdout.includes('after-the-flood'), 'the post after the flood', 120_000);
    sample();
    expect(most, 'most resident memory of listen, MiB').toBeLessThan(RSS_BOUND_MIB);
    expect(jsonLines(cli.stdout).map((event) => event.data.id)).toEqual(['after-the-flood']);
  });
});

describe('an acknowledgement for something not asked for ends the command, naming what the service answered', () => {
  const acking = (data: (command: any) => Record<string, unknown>) =>
    scriptedService((ws) => {
      send(ws, 'connected', { message: 'connected', userId: 'u', streams: ['wire', 'other'] });
      ws.on('message', (raw) => {
        const command = JSON.parse(String(raw));
        send(ws, 'sub_ack', { command: command.event, history: 0, ...data(command) }, command.requestId);
        for (let i = 0; i < 10; i++) send(ws, 'stream.post.created', wirePost({ id: `live-${i}`, streamId: 'other' }));
      });
    });

  it.each([
    [
      'other streams than --streams named',
      ['--streams', 'wire'],
      () => ({ streamIds: ['other'], lastPosts: 100 }),
      /"other".*not to the streams asked for \("wire"\)/,
    ],
    [
      'no streamIds where --streams named some',
      ['--streams', 'wire'],
      () => ({ lastPosts: 100 }),
      /to no streams \(no streamIds\), not to the streams asked for \("wire"\)/,
    ],
    [
      'a stream the key does not follow',
      [],
      () => ({ streamIds: ['wire', 'elsewhere'], lastPosts: 100 }),
      /"elsewhere", not among the streams it said the key follows/,
    ],
    [
      'a lastPosts over the one asked for',
      ['--streams', 'wire'],
      () => ({ streamIds: ['wire'], lastPosts: 1000 }),
      /lastPosts 1000, more than the 100 asked for/,
    ],
  ])('%s: exit 1', async (_what, flags, data, words) => {
    const server = await acking(data);
    for (const command of ['listen', 'tree']) {
      const result = await finish(inProcess(listenArgs(server, command, ['--json', ...flags])));
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(words);
      expect(result.stderr).toMatch(/^stream-posts: unexpected-reply: the service acknowledged /m);
      expect(result.stdout).toBe('');
    }
  });
});
