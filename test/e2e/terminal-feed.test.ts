import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { scriptedService } from '../support/hostile.js';
import { advanceClock, KEYS, publishMany } from '../support/harness.js';
import { until } from '../support/poll.js';
import { cliFixture } from '../support/serve.js';
import { Tmux, alertsConfig, lineOf, publishAsOwner, rowsWith } from '../terminal/tmux.js';

const fixture = cliFixture('terminal-feed');

let words = 0;
/** A word no other post of the shared serve has. */
const unique = (label: string) => `${label}${process.pid}x${++words}`;

/** `terminal` as alice against the file's serve. */
function terminal(args: string[] = [], env: Record<string, string> = {}): Promise<Tmux> {
  return Tmux.start(['terminal', '--url', fixture.serve.url, '--last', '0', ...args], {
    STREAM_POSTS_API_KEY: KEYS.alice,
    ...env,
  });
}

const connected = (tmux: Tmux) => tmux.waitFor(/● connected/, 'the connected header');

/** Publishes to the file's serve as the stream's owner. */
const post = (stream: string, text: string, extra: Record<string, unknown> = {}) =>
  publishAsOwner(fixture.serve.url, stream, text, extra);

const send = (ws: WebSocket, event: string, data: unknown, requestId?: string) =>
  ws.send(JSON.stringify({ event, data, ...(requestId ? { requestId } : {}) }));

// Each hostile sequence is followed by a word, so the raw bytes show whether it reached the terminal whole.
const HOSTILE_NAME = 'N\u001B]52;c;cHc=\u0007\u001B[2Jc\u001B[?1049lq\u202Ee\u200Bz';
// A removed character is shown as a space, and a run of them as one; the name fits the overlay's 30 columns whole.
const NAME_SHOWN = 'N ]52;c;cHc= [2Jc [?1049lq e z';
const HOSTILE_ID = 'id\u001B]0;TITLED\u0007\u001B[2Jwiped';
const ID_SHOWN = 'id ]0;TITLED [2Jwiped';

describe('terminal: nothing the service names drives the terminal', () => {
  it('stream names looked up and stream ids from sub_ack are sanitized in the streams overlay and the columns', async () => {
    const lookups: string[] = [];
    const service = await scriptedService(
      (ws) => {
        // The hosted dialect: no user in `connected`, posts without a stream name, so names are looked up.
        send(ws, 'connected', { message: 'connected' });
        ws.on('message', (data) => {
          const command = JSON.parse(String(data)) as { event: string; requestId?: string };
          send(
            ws,
            'sub_ack',
            { command: command.event, streamIds: ['named', HOSTILE_ID], lastPosts: 0 },
            command.requestId,
          );
          const posts: [string, string][] = [
            ['named', 'a post of the named stream'],
            [HOSTILE_ID, 'a post of the hostile id'],
          ];
          for (const [streamId, text] of posts)
            send(ws, 'stream.post.created', {
              id: `${text.length}${streamId.length}`,
              streamId,
              text,
              createdAt: new Date().toISOString(),
            });
        });
      },
      {
        onRequest: (request, response) => {
          const id = decodeURIComponent(request.url!.split('?')[0]!.split('/')[3] ?? '');
          lookups.push(id);
          if (id !== 'named') return void response.writeHead(404).end();
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ id, name: HOSTILE_NAME, customTargets: [] }));
        },
      },
    );
    const tmux = await Tmux.start(['terminal', '--url', service.url, '--last', '0'], {
      STREAM_POSTS_API_KEY: 'hostile-test-key',
    });
    const output = join(fixture.tmp, 'pane-hostile-names');
    await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
    await tmux.tmux('select-pane', '-T', 'untouched');
    await tmux.waitFor(/a post of the hostile id/, 'the posts');
    await until(() => lookups.includes('named') && lookups.includes(HOSTILE_ID), 'both lookups');
    await tmux.keys('f');
    const overlay = await tmux.waitFor((screen) => screen.includes(NAME_SHOWN), 'the sanitized name in the overlay');
    expect(overlay).toContain(ID_SHOWN);
    // One stream each: the id of the sub_ack and the id of its posts are the same stream.
    expect(overlay.split('\n').filter((line) => /^[› ] (shown|muted|solo )/.test(line))).toHaveLength(2);
    await tmux.keys('Enter', 'c');
    const columns = await tmux.waitFor(
      (screen) => screen.includes(NAME_SHOWN.slice(0, 16)) && screen.includes(ID_SHOWN),
      'both names over the columns',
    );
    expect(columns).toContain('a post of the named stream');
    await tmux.keys('c');
    await tmux.waitFor(/j\/k move/, 'the feed again');
    expect(await tmux.format('#{pane_title}')).toBe('untouched');
    expect(await tmux.format('#{alternate_on}')).toBe('1');
    const written = await readFile(output, 'utf8');
    for (const raw of ['\u001B]52', '\u001B]0;', '\u001B[2Jc', '\u001B[2Jwiped', '\u001B[?1049lq', '\u202E', '\u200B'])
      expect(written).not.toContain(raw);
    expect(written).toContain(NAME_SHOWN);
  });
});

/** The screen line of the selected row. */
const selectedLine = (screen: string) => screen.split('\n').findIndex((line) => line.startsWith('›'));

describe('terminal: stream names looked up', () => {
  it('at most 8 at a time, for a subscription to 300 streams', async () => {
    const ids = Array.from({ length: 300 }, (_, index) => `stream-${index}`);
    let inFlight = 0;
    let most = 0;
    const answered = new Set<string>();
    const service = await scriptedService(
      (ws) => {
        send(ws, 'connected', { message: 'connected' });
        ws.on('message', (data) => {
          const command = JSON.parse(String(data)) as { event: string; requestId?: string };
          send(ws, 'sub_ack', { command: command.event, streamIds: ids, lastPosts: 0 }, command.requestId);
        });
      },
      {
        onRequest: (request, response) => {
          const id = decodeURIComponent(request.url!.split('?')[0]!.split('/')[3] ?? '');
          inFlight += 1;
          most = Math.max(most, inFlight);
          // Held a moment, so that lookups not bounded would pile up here.
          setTimeout(() => {
            inFlight -= 1;
            answered.add(id);
            response.writeHead(200, { 'content-type': 'application/json' });
            response.end(JSON.stringify({ id, name: `Name ${id}` }));
          }, 5);
        },
      },
    );
    const tmux = await Tmux.start(['terminal', '--url', service.url, '--last', '0'], {
      STREAM_POSTS_API_KEY: 'lookup-test-key',
    });
    await tmux.waitFor(/streams 300 shown/, 'the 300 streams');
    await until(() => answered.size === ids.length, 'every name looked up');
    expect(most).toBeLessThanOrEqual(8);
    expect(most).toBeGreaterThan(1);
    await tmux.keys('f');
    await tmux.waitFor(/Name stream-0 /, 'the names in the overlay');
  });
});

describe('terminal: news in the right place', () => {
  it('a released post moves to the top at its release, showing its release time, marked until selected', async () => {
    const tmux = await terminal(['--utc']);
    await connected(tmux);
    const secret = unique('secret');
    const hidden = await post('macro-wire', `${secret} revealed`, {
      releaseAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const later = [unique('later'), unique('later')];
    for (const text of later) await post('macro-wire', text);
    await tmux.waitFor((screen) => screen.includes(later[1]!) && screen.includes('🔒'), 'the lock under two posts');
    await advanceClock(fixture.serve, 3_600_000);
    const released = await tmux.waitFor((screen) => screen.includes(secret), 'the release');
    expect(lineOf(released, secret)).toBe(1);
    expect(lineOf(released, later[1]!)).toBe(2);
    const row = rowsWith(released, secret)[0]!;
    expect(row).toMatch(/^.{3}\* /);
    expect(row).toContain('🔓 released');
    // The row's time is the release; the detail pane's first line is the post's creation.
    const time = (iso: unknown) => String(iso).slice(11, 19);
    expect(row.slice(0, 30)).toContain(time(hidden.post.releaseAt));
    await tmux.keys('Enter');
    const detail = await tmux.waitFor(/^─+$/m, 'the detail pane');
    const pane = detail.split('\n');
    const created = pane[pane.findIndex((line) => /^─+$/.test(line)) + 1]!;
    expect(created).toContain(time(hidden.post.createdAt));
    // Selected (the pane was opened on it): the mark is gone.
    const seen = await tmux.waitFor((screen) => !(rowsWith(screen, secret)[0] ?? '🔓').includes('🔓'), 'the mark gone');
    expect(rowsWith(seen, secret)[0]).toMatch(/^› {3} /);
  });

  it('posts arriving above a selection leave it on its line, and the header counts them; g goes to them', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const first = Array.from({ length: 6 }, () => unique('first'));
    for (const text of first) await post('macro-wire', text);
    await tmux.waitFor((screen) => screen.includes(first[5]!), 'the first posts');
    await tmux.keys('j', 'j', 'j');
    const before = await tmux.waitFor((screen) => (rowsWith(screen, first[2]!)[0] ?? '').startsWith('›'), 'j j j');
    const line = selectedLine(before);
    const burst = unique('burst');
    await publishMany(
      fixture.serve,
      KEYS.macroWire,
      Array.from({ length: 40 }, (_, index) => ({ streamId: 'macro-wire', content: `${burst} ${index}` })),
    );
    const after = await tmux.waitFor(/↑ 40 new/, 'the count of new posts above');
    expect(selectedLine(after)).toBe(line);
    expect(rowsWith(after, first[2]!)[0]).toMatch(/^›/);
    expect(after).not.toContain(`${burst} 39`);
    await tmux.keys('g');
    const top = await tmux.waitFor((screen) => (rowsWith(screen, `${burst} 39`)[0] ?? '').startsWith('›'), 'g');
    expect(selectedLine(top)).toBe(1);
    expect(top).not.toContain('↑');
  });

  it('the detail pane stays on the post the user opened, at its scroll, as posts arrive', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const read = unique('read');
    const paragraphs = Array.from({ length: 30 }, (_, index) => `paragraph ${index + 1} of ${read}`);
    await post('macro-wire', `${read}\n\n${paragraphs.join('\n\n')}`);
    await tmux.waitFor((screen) => screen.includes(read), read);
    await tmux.keys('Enter');
    await tmux.waitFor(/paragraph 1 of/, 'the detail pane');
    await tmux.keys('J', 'J', 'J', 'J');
    const scrolled = await tmux.waitFor((screen) => !screen.includes(`paragraph 1 of`), 'the pane scrolled');
    const paneOf = (screen: string) => {
      const lines = screen.split('\n');
      return lines.slice(lines.findIndex((line) => /^─+$/.test(line)) + 1, -2).join('\n');
    };
    const pane = paneOf(scrolled);
    const news = unique('news');
    await post('macro-wire', news);
    // Above the selected row, which stays on its line: the header says so.
    const after = await tmux.waitFor(/↑ 1 new/, 'the new post counted');
    expect(paneOf(after)).toBe(pane);
    expect(rowsWith(after, read)[0]).toMatch(/^›/);
    await tmux.keys('k');
    const moved = await tmux.waitFor((screen) => paneOf(screen).includes(news), 'the pane on the post moved to');
    expect(rowsWith(moved, news)[0]).toMatch(/^›/);
  });
});

describe('terminal: search and alert rules', () => {
  it('/$btc finds the cashtag, marked in the row and the detail pane; an invalid pattern says why and keeps the last', async () => {
    const tmux = await terminal(['--alert', '$BTC']);
    await connected(tmux);
    const tag = unique('cash');
    await post('macro-wire', `${tag} buy $BTC now`);
    await post('macro-wire', `${tag} plain btc`);
    const both = await tmux.waitFor((screen) => rowsWith(screen, tag).length === 2, 'both posts');
    // `--alert '$BTC'` matched the cashtag, and only it: the alert column.
    expect(rowsWith(both, 'buy $BTC')[0]).toMatch(/^..!/);
    expect(rowsWith(both, 'plain btc')[0]).toMatch(/^.. /);
    await tmux.keys('/');
    await tmux.type('$btc');
    const found = await tmux.waitFor(/\/\$btc\/ 1 found/, 'one match');
    expect(found).not.toContain('plain btc');
    const marked = /\u001B\[[0-9;]*4[0-9;]*m(?:\u001B\[[0-9;]*m)*\$BTC/;
    const coloured = await tmux.waitFor((screen) => marked.test(screen), 'the match marked in the row', true);
    expect(rowsWith(coloured, `${tag} buy`)[0]).toMatch(marked);
    await tmux.type('(');
    const invalid = await tmux.waitFor(/✕ Unterminated group; showing \/\$btc\//, 'the reason in the search line');
    expect(invalid).toMatch(/\/\$btc\/ 1 found/);
    expect(invalid).not.toContain('plain btc');
    await tmux.keys('Enter');
    await tmux.waitFor(/search kept as \/\$btc\/: Unterminated group/, 'the search kept');
    await tmux.keys('Enter');
    const pane = await tmux.waitFor(/─{10}/, 'the detail pane', true);
    const paneLines = pane.split('\n');
    const text = paneLines.slice(paneLines.findIndex((line) => /─{10}/.test(line)) + 1);
    expect(text.some((line) => line.includes('buy') && marked.test(line))).toBe(true);
  });
});

describe('terminal: pins and marks', () => {
  it('pins outlive the buffer; the header counts them, P lists them all; marks never hide one another', async () => {
    // The rule of docs/terminal.md: posts of Whale Alerts that move 100 BTC or more are pinned.
    const config = await alertsConfig(join(fixture.tmp, 'pins-config'), [
      { match: '\\b\\d{3,}(,\\d{3})* BTC\\b', streams: ['whale-alerts'], action: 'pin' },
    ]);
    const old = unique('old');
    await post('macro-wire', `${old} history ringme`);
    const tmux = await Tmux.start(
      ['terminal', '--url', fixture.serve.url, '--last', '1', '--buffer', '10', '--alert', 'ringme'],
      { STREAM_POSTS_API_KEY: KEYS.alice, XDG_CONFIG_HOME: config },
    );
    await connected(tmux);
    // History and an alert: both marks, each in its column.
    const history = await tmux.waitFor((screen) => screen.includes(old), 'the history post');
    expect(rowsWith(history, old)[0]).toMatch(/^. !· /);
    const whales = [unique('whale'), unique('whale'), unique('whale'), unique('whale')];
    for (const text of whales) await post('whale-alerts', `${text} moved 500 BTC`);
    const plain = unique('quiet');
    await post('whale-alerts', `${plain} moved 50 BTC`);
    const pinned = await tmux.waitFor(/4 pinned/, 'four pins');
    expect(pinned).toMatch(/^ {2}\+1 more pinned: P lists them/m);
    expect(pinned.split('\n')[1]).toMatch(new RegExp(`^ \\^!  .*${whales[3]}`));
    // Whale Alerts in the stream's name pins nothing: a smaller move is not pinned.
    for (const row of rowsWith(pinned, plain)) expect(row).toMatch(/^. {3} /);
    const burst = unique('burst');
    await publishMany(
      fixture.serve,
      KEYS.macroWire,
      Array.from({ length: 30 }, (_, index) => ({ streamId: 'macro-wire', content: `${burst} ${index}` })),
    );
    const after = await tmux.waitFor((screen) => screen.includes(`${burst} 29`), 'the burst');
    expect(after).toMatch(/ 10 posts /);
    expect(after).toMatch(/4 pinned/);
    await tmux.keys('P');
    const list = await tmux.waitFor(/^Pinned \(4 of 50/m, 'the list of pins');
    const listed = list.split('\n').slice(list.split('\n').findIndex((line) => line.startsWith('Pinned (')));
    for (const text of whales) expect(listed.filter((line) => line.includes(text))).toHaveLength(1);
    await tmux.keys('x');
    await tmux.waitFor((screen) => !/^Pinned \(/m.test(screen), 'the list closed');
  });
});
