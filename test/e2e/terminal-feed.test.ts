import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { scriptedService } from '../support/hostile.js';
import { until } from '../support/poll.js';
import { cliFixture } from '../support/serve.js';
import { Tmux } from '../terminal/tmux.js';

const fixture = cliFixture('terminal-feed');

const send = (ws: WebSocket, event: string, data: unknown, requestId?: string) =>
  ws.send(JSON.stringify({ event, data, ...(requestId ? { requestId } : {}) }));

// Each hostile sequence is followed by a word, so the raw bytes show whether it reached the terminal whole.
const HOSTILE_NAME = 'N\u001B]52;c;cHduZWQ=\u0007\u001B[2Jc\u001B[?1049lq\u202Ee\u200Bz';
const NAME_SHOWN = 'N]52;c;cHduZWQ=[2Jc[?1049lqez';
const HOSTILE_ID = 'id\u001B]0;TITLED\u0007\u001B[2Jwiped';
const ID_SHOWN = 'id]0;TITLED[2Jwiped';

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
