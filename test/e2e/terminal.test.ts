import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock } from '../support/harness.js';
import { HOSTED_KEYS, startHostedDouble } from '../support/hosted-double.js';
import { Tmux, alertsConfig, lineOf, publishAsOwner, rowsWith } from '../terminal/tmux.js';
import { runToEnd } from '../support/cli.js';
import { KEYS } from '../support/harness.js';
import { until } from '../support/poll.js';
import { TcpProxy } from '../support/proxy.js';
import { cliFixture } from '../support/serve.js';

const run = promisify(execFile);
const fixture = cliFixture('terminal');
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});

let words = 0;
/** A word no other post of the shared serve has. */
const unique = (label: string) => `${label}${process.pid}x${++words}`;

/** `terminal` as alice against the file's serve (or `url`). */
function terminal(args: string[] = [], env: Record<string, string> = {}, url = fixture.serve.url): Promise<Tmux> {
  return Tmux.start(['terminal', '--url', url, '--last', '0', ...args], {
    STREAM_POSTS_API_KEY: KEYS.alice,
    ...env,
  });
}

/** Waits until the terminal is subscribed (the header says connected). */
async function connected(tmux: Tmux): Promise<string> {
  return tmux.waitFor(/● connected/, 'the connected header');
}

/** Publishes to the file's serve as the stream's owner. */
const post = (stream: string, text: string, extra: Record<string, unknown> = {}) =>
  publishAsOwner(fixture.serve.url, stream, text, extra);

describe('terminal in tmux', () => {
  it('shows the newest first, history marked; Enter renders markdown; q gives back the primary screen', async () => {
    const older = unique('older');
    await post('macro-wire', `${older} first`);
    const tmux = await Tmux.start(['terminal', '--url', fixture.serve.url, '--last', '5'], {
      STREAM_POSTS_API_KEY: KEYS.alice,
    });
    await connected(tmux);
    expect(await tmux.format('#{alternate_on}')).toBe('1');
    const history = await tmux.waitFor((screen) => screen.includes(older), older);
    expect(rowsWith(history, older)[0]).toMatch(/^.{3}· /);
    const newer = unique('newer');
    await post(
      'macro-wire',
      `# ${newer} **bold** heading\n\n- item one\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |`,
      { contentType: 'markdown' },
    );
    const screen = await tmux.waitFor((text) => text.includes(newer), newer);
    // Markdown marks are taken out of the headline.
    expect(rowsWith(screen, newer)[0]).toContain(`${newer} bold heading`);
    expect(lineOf(screen, newer)).toBeLessThan(lineOf(screen, older));
    expect(lineOf(screen, newer)).toBe(1);
    await tmux.keys('Enter');
    const detail = await tmux.waitFor(/item two/, 'the detail pane');
    expect(detail).not.toContain('**bold**');
    expect(detail).toMatch(/\* item one|• item one/);
    expect(detail).toMatch(/│ 1 +│ 2 +│|\| 1 +\| 2/);
    await tmux.keys('q');
    const after = await tmux.waitFor(/\[exit 0\]/, 'the exit status');
    expect(after).toContain('primary screen');
    expect(after).not.toContain(newer);
    expect(await tmux.format('#{alternate_on}')).toBe('0');
    expect(await tmux.format('#{cursor_flag}')).toBe('1');
  });

  it('searches with / as typed, n moves through the matches, Esc clears', async () => {
    const tag = unique('needle');
    const tmux = await terminal();
    await connected(tmux);
    for (const [stream, text] of [
      ['macro-wire', `${tag} alpha`],
      ['whale-alerts', `other ${unique('hay')}`],
      ['crypto-legal', `${tag.toUpperCase()} beta`],
    ] as const)
      await post(stream, text);
    await tmux.waitFor((screen) => screen.includes(`${tag.toUpperCase()} beta`), 'the third post');
    await tmux.keys('/');
    await tmux.type(tag);
    const found = await tmux.waitFor(/2 found/, 'two matches');
    expect(found).not.toMatch(/other hay/);
    expect(rowsWith(found, `${tag.toUpperCase()} beta`)[0]).toMatch(/^›/);
    await tmux.keys('Enter', 'n');
    const moved = await tmux.waitFor((screen) => /^›/.test(rowsWith(screen, `${tag} alpha`)[0] ?? ''), 'n');
    expect(rowsWith(moved, `${tag.toUpperCase()} beta`)[0]).not.toMatch(/^›/);
    await tmux.keys('Escape');
    await tmux.waitFor((screen) => !screen.includes('found') && screen.includes('other hay'), 'the whole feed');
  });

  it('mutes and solos streams with f; space pauses and counts the new posts; p pins', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const whale = unique('whale');
    const macro = unique('macro');
    await post('whale-alerts', whale);
    await post('macro-wire', macro);
    await tmux.waitFor((screen) => screen.includes(whale) && screen.includes(macro), 'both posts');
    await tmux.keys('f');
    const picker = await tmux.waitFor(/Streams: /, 'the stream picker');
    // Walk to Whale Alerts and mute it.
    const names = picker.split('\n').filter((line) => /^[› ] (shown|muted|solo )/.test(line));
    const whaleAt = names.findIndex((line) => line.includes('Whale Alerts'));
    expect(whaleAt).toBeGreaterThanOrEqual(0);
    for (let step = 0; step < whaleAt; step++) await tmux.keys('j');
    await tmux.keys('m', 'Enter');
    const muted = await tmux.waitFor(/1 muted/, 'one stream muted');
    expect(muted).not.toContain(whale);
    expect(muted).toContain(macro);
    await tmux.keys('f', 's', 'Enter');
    const solo = await tmux.waitFor(/\(solo\)/, 'solo');
    expect(solo).toContain(whale);
    expect(solo).not.toContain(macro);
    await tmux.keys('f', 's', 'm', 'Enter');
    await tmux.waitFor((screen) => screen.includes(whale) && screen.includes(macro) && !/muted|solo/.test(screen));

    await tmux.keys('Space');
    await tmux.waitFor(/PAUSED 0 new/, 'paused');
    const late = [unique('late'), unique('late')];
    for (const text of late) await post('macro-wire', text);
    const paused = await tmux.waitFor(/PAUSED 2 new/, 'two new posts counted');
    expect(paused).not.toContain(late[0]);
    await tmux.keys('Space');
    const resumed = await tmux.waitFor((screen) => screen.includes(late[1]!), 'the posts after the pause');
    expect(resumed).not.toContain('PAUSED');

    // The oldest post is the whale post: pinned, it stays above the feed.
    await tmux.keys('G');
    await tmux.waitFor((screen) => (rowsWith(screen, whale)[0] ?? '').startsWith('›'), 'the oldest post selected');
    await tmux.keys('p', 'g');
    const pinned = await tmux.waitFor((screen) => /^ \^/m.test(screen), 'a pinned row');
    expect(pinned.split('\n')[1]).toMatch(new RegExp(`^ \\^ .*${whale}`));
    expect(pinned.split('\n')[2]).toMatch(new RegExp(`^›.*${late[1]}`));
  });

  it('a hidden post shows a lock and its countdown, then turns visible, once', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const secret = unique('secret');
    const hidden = await post('macro-wire', `${secret} revealed`, {
      releaseAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(hidden.post.id).toBeTruthy();
    const locked = await tmux.waitFor(/🔒 (59:\d\d|1:00:00)/, 'the countdown');
    expect(locked).not.toContain(secret);
    const lockedLine = lineOf(locked, '🔒');
    await advanceClock(fixture.serve, 3_600_000);
    const released = await tmux.waitFor((screen) => screen.includes(secret), 'the release');
    expect(rowsWith(released, secret)).toHaveLength(1);
    expect(lineOf(released, secret)).toBe(lockedLine);
    expect(rowsWith(released, secret)[0]).toMatch(/^.{3}\* .*🔓 released/);
    expect(released).not.toContain('🔒');
  });

  it('alert rules: --alert rings the bell, a notify rule writes OSC 9 and OSC 777', async () => {
    const config = await alertsConfig(join(fixture.tmp, 'alerts-config'), [
      { match: 'notify-?me', action: 'notify' },
      {
        match: 'exec-?me',
        action: 'exec',
        command: `tee -a '${join(fixture.tmp, 'exec-output')}'; echo exec-printed-this`,
      },
    ]);
    const tmux = await terminal(['--alert', 'ring-?me'], { XDG_CONFIG_HOME: config });
    await connected(tmux);
    const output = join(fixture.tmp, 'pane-output');
    await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
    await tmux.tmux('new-window', '-d');
    expect(await tmux.format('#{window_bell_flag}')).toBe('0');
    await post('macro-wire', `please ringme ${unique('a')}`);
    await post('macro-wire', `please notifyme ${unique('b')}`);
    await tmux.waitFor(/notifyme/, 'the notify post');
    await tmux.waitForFormat('#{window_bell_flag}', '1');
    const written = await readFile(output, 'utf8');
    expect(written).toMatch(/\u001B\]9;Macro Wire: please notifyme \S+\u0007/);
    expect(written).toMatch(/\u001B\]777;notify;Macro Wire;please notifyme \S+\u0007/);
    const execMe = `please execme ${unique('c')}`;
    const executed = await post('macro-wire', execMe);
    await tmux.waitFor(/execme/, 'the exec post');
    await until(
      async () => (await readFile(join(fixture.tmp, 'exec-output'), 'utf8').catch(() => '')).endsWith('\n'),
      'the exec command',
    );
    expect(JSON.parse(await readFile(join(fixture.tmp, 'exec-output'), 'utf8'))).toMatchObject({
      event: 'stream.post.created',
      data: { id: executed.post.id, text: execMe },
    });
    // What the command printed did not reach the screen.
    expect(await tmux.screen()).not.toContain('exec-printed-this');
    await tmux.keys('a');
    const rules = await tmux.waitFor(/Alert rules/, 'the alert rules');
    expect(rules).not.toContain('exec-printed-this');
    expect(rules).toMatch(/--alert 1 +bell +1 matched/);
    expect(rules).toMatch(/profile rule 1 +notify +1 matched/);
    expect(rules).toMatch(/profile rule 2 +exec +1 matched/);
  });

  it('o opens the first link with the system opener, run without a shell', async () => {
    const bin = join(fixture.tmp, 'opener-bin');
    await mkdir(bin, { recursive: true });
    const record = join(fixture.tmp, 'opened');
    await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" >> '${record}'\n`);
    await chmod(join(bin, 'xdg-open'), 0o755);
    const tmux = await terminal([], { PATH: `${bin}:${process.env['PATH']}` });
    await connected(tmux);
    const tag = unique('link');
    await post('macro-wire', `${tag} see https://example.org/a?b=1&c=$HOME;touch and https://example.com/two`);
    await tmux.waitFor((screen) => screen.includes(tag), tag);
    await tmux.keys('o');
    await tmux.waitFor(/opened https:\/\/example\.org/, 'the opener ran');
    await tmux.keys('2');
    await tmux.waitFor(/opened https:\/\/example\.com\/two/, 'the second link');
    expect((await readFile(record, 'utf8')).split('\n')).toEqual([
      'https://example.org/a?b=1&c=$HOME;touch',
      'https://example.com/two',
      '',
    ]);
  });

  it('? lists the keys, c shows a column per stream, y copies the link through OSC 52, r reconnects', async () => {
    const proxy = await TcpProxy.start(fixture.serve.port);
    proxies.push(proxy);
    const older = unique('older');
    await post('macro-wire', older);
    const tmux = await terminal([], {}, proxy.url);
    await connected(tmux);
    const output = join(fixture.tmp, 'pane-osc52');
    await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
    const macro = unique('column');
    const whale = unique('column');
    await post('macro-wire', `${macro} https://example.org/copied`);
    await post('whale-alerts', whale);
    await tmux.waitFor((screen) => screen.includes(macro) && screen.includes(whale), 'both posts');
    await tmux.keys('?');
    const help = await tmux.waitFor(/^Keys/m, 'the keys');
    expect(help).toMatch(/PgUp PgDn/);
    expect(help).toMatch(/q Ctrl-C +quit/);
    await tmux.keys('x');
    await tmux.waitFor((screen) => !/^Keys/m.test(screen), 'the keys closed');
    await tmux.keys('c');
    const columns = await tmux.waitFor(/^Macro Wire +Whale Alerts/m, 'a column per stream');
    const line = (text: string) => columns.split('\n').find((row) => row.includes(text))!;
    expect(line(macro).indexOf(macro)).toBeLessThan(60);
    expect(line(whale).indexOf(whale)).toBeGreaterThanOrEqual(60);
    await tmux.keys('c', 'j', 'y');
    await tmux.waitFor(/link sent to the terminal .*: https:\/\/example\.org\/copied/, 'the copy');
    const copied = Buffer.from('https://example.org/copied').toString('base64');
    await until(
      async () => (await readFile(output, 'utf8').catch(() => '')).includes(`\u001B]52;c;${copied}\u0007`),
      'OSC 52',
    );
    // r: a new connection, whose replay of the recent past adds nothing already shown or older than the view.
    // (g first: the selection follows the newest post again, so the post after the reconnect is on screen.)
    const before = proxy.connections;
    await tmux.keys('g', 'r');
    await until(async () => proxy.connections > before, 'a new connection');
    await connected(tmux);
    const after = unique('after');
    await post('macro-wire', after);
    const screen = await tmux.waitFor((text) => text.includes(after), 'a post after the reconnect');
    for (const text of [macro, whale, after]) expect(rowsWith(screen, text)).toHaveLength(1);
    expect(screen).not.toContain(older);
    expect(screen).toMatch(/ 3 posts /);
  });

  it('follows a resize, and a window too small says so until it is enlarged; NO_COLOR is honoured', async () => {
    const tmux = await terminal([], { NO_COLOR: '1' });
    await connected(tmux);
    await post('macro-wire', unique('plain'));
    const plain = await tmux.waitFor(/plain/, 'a post', true);
    expect(plain).not.toMatch(/\u001B\[[0-9;]*[34]\d[;m]/);
    await tmux.resize(50, 12);
    await tmux.waitFor(/enlarge the terminal/, 'the too-small message');
    await tmux.resize(100, 30);
    const screen = await tmux.waitFor(/● connected/, 'the feed again');
    expect(screen.split('\n')[0]!.length).toBeLessThanOrEqual(100);
    expect(screen).toMatch(/^j\/k move/m);
  });

  it('after a resize, the detail pane wraps the markdown again at the new width', async () => {
    const tag = unique('wrap');
    const words = Array.from({ length: 40 }, (_, index) => `word${index + 1}`);
    await post('macro-wire', `${tag} **strong** ${words.join(' ')}`, { contentType: 'markdown' });
    const tmux = await terminal(['--last', '1']);
    await tmux.waitFor((screen) => screen.includes(tag), tag);
    await tmux.keys('Enter');
    // The pane's text: the lines under its rule, after the line naming the post's moment and stream.
    const paragraph = (screen: string) => {
      const lines = screen.split('\n');
      const rule = lines.findIndex((line) => /^─+$/.test(line));
      return rule < 0 ? [] : lines.slice(rule + 2).filter((line) => /^ \S/.test(line));
    };
    const rendered = (screen: string) => paragraph(screen).some((line) => line.includes(`${tag} strong word1 `));
    const wide = paragraph(await tmux.waitFor(rendered, 'the paragraph rendered'));
    const firstLine = wide[0]!.trim().split(' ');
    expect(wide[0]!.length).toBeGreaterThan(70);
    await tmux.resize(70, 40);
    const shown = (lines: string[]) => lines.join(' ').trim().split(/\s+/);
    // Re-wrapped, not cut: every word is there, and a word of the first line at 120 columns starts a later one.
    const narrow = paragraph(
      await tmux.waitFor((screen) => {
        const lines = paragraph(screen);
        const starts = lines.slice(1).map((line) => line.trim().split(' ')[0]!);
        return shown(lines).length === words.length + 2 && starts.some((word) => firstLine.includes(word));
      }, 'the paragraph wrapped again within 70 columns'),
    );
    for (const line of narrow) expect(line.length).toBeLessThanOrEqual(70);
    expect(narrow.join(' ')).not.toContain('…');
    expect(shown(narrow)).toEqual([tag, 'strong', ...words]);
  });

  it('hostile posts leave the screen intact: escapes, 64 KiB, a nesting bomb, emoji and CJK', async () => {
    const tmux = await terminal();
    await connected(tmux);
    await tmux.tmux('select-pane', '-T', 'untouched');
    const tag = unique('hostile');
    await post('macro-wire', `${tag} esc \u001B]0;owned\u0007\u001B[2J\u001B[H\u009B31m title`);
    await post('macro-wire', `${tag} big ${'word '.repeat(13_000)}`);
    await post('macro-wire', `${tag} bomb\n\n${'> '.repeat(3000)}${'['.repeat(3000)}x${'*'.repeat(3000)}`, {
      contentType: 'markdown',
    });
    await post('macro-wire', `${tag} 表情 😀👍🏽 中文字符 wide`);
    const screen = await tmux.waitFor((text) => text.includes('中文字符'), 'the wide post');
    expect(await tmux.format('#{pane_title}')).toBe('untouched');
    const lines = screen.split('\n');
    expect(lines[0]).toMatch(/^ ● connected/);
    expect(lines.some((line) => line.startsWith('j/k move'))).toBe(true);
    expect(rowsWith(screen, tag)).toHaveLength(4);
    // The wide row ends where the others do: measured as the terminal draws it.
    const wide = rowsWith(screen, '中文字符')[0]!;
    expect(wide).toContain(`${tag} 表情 😀👍🏽 中文字符 wide`);
    await tmux.keys('j', 'Enter');
    await tmux.waitFor(/word word/, 'the big post in the detail pane');
    await tmux.keys('k', 'k');
    await tmux.waitFor(/wide/, 'still drawing');
    expect(await tmux.format('#{pane_title}')).toBe('untouched');
  });

  it('the detail pane writes its links as OSC 8 hyperlinks, and only its own', async () => {
    const tmux = await terminal([], { FORCE_HYPERLINK: '1' });
    await connected(tmux);
    const output = join(fixture.tmp, 'pane-osc8');
    await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
    const tag = unique('osc');
    const url = `https://example.org/${tag}`;
    await post('macro-wire', `${tag} read ${url} \u001B]8;;https://evil.example\u0007forged\u001B]8;;\u0007 end`);
    await tmux.waitFor((screen) => screen.includes(tag), tag);
    await tmux.keys('Enter');
    await tmux.waitFor(/links \(o or 1-9 opens/, 'the links of the detail pane');
    const link = `\u001B]8;;${url}\u0007`;
    // In the text, and in the numbered list under it.
    await until(
      async () => (await readFile(output, 'utf8').catch(() => '')).split(link).length - 1 >= 2,
      'two OSC 8 hyperlinks',
    );
    // Every hyperlink shows its own address: the forged one reached the screen as plain text
    // (the address inside it is a link of its own, as any address in a text is).
    const written = await readFile(output, 'utf8');
    const links = [...written.matchAll(/\u001B\]8;;([^\u0007]+)\u0007(.*?)\u001B\]8;;\u0007/g)];
    for (const [, target, text] of links) expect(text!.replace(/\u001B\[[0-9;]*m/g, '')).toBe(target);
    expect(links.map(([, , text]) => text)).not.toContain('forged');
  });

  it('a dropped connection shows reconnecting, then the posts resume, none lost or repeated', async () => {
    const proxy = await TcpProxy.start(fixture.serve.port);
    proxies.push(proxy);
    const tmux = await terminal([], {}, proxy.url);
    await connected(tmux);
    const before = unique('before');
    await post('macro-wire', before);
    await tmux.waitFor((screen) => screen.includes(before), before);
    proxy.refuse(true);
    proxy.cut();
    await tmux.waitFor(/reconnecting \(attempt \d+/, 'reconnecting in the header');
    const during = unique('during');
    await post('macro-wire', during);
    proxy.refuse(false);
    const after = unique('after');
    const screen = await tmux.waitFor((text) => text.includes(during), 'the post published while down');
    expect(screen).toMatch(/● connected/);
    await post('macro-wire', after);
    const last = await tmux.waitFor((text) => text.includes(after), 'the post after');
    for (const text of [before, during, after]) expect(rowsWith(last, text)).toHaveLength(1);
    expect(lineOf(last, after)).toBeLessThan(lineOf(last, during));
  });

  it('works against the hosted dialect: history, names looked up, live posts', async () => {
    const double = await startHostedDouble();
    try {
      const tmux = await Tmux.start(['terminal', '--url', double.url, '--last', '3'], {
        STREAM_POSTS_API_KEY: HOSTED_KEYS.reader,
      });
      await tmux.waitFor(/● connected \(hosted dialect\)/, 'the hosted dialect');
      await tmux.waitFor(/Macro Desk .*history 3 of A/, 'history under the stream name');
      double.publish('01J366WJBXF6BN036SXVNRAP8A', 'live from the hosted double');
      const screen = await tmux.waitFor(/live from the hosted double/, 'the live post');
      expect(lineOf(screen, 'live from the hosted double')).toBe(1);
      expect(rowsWith(screen, 'live from the hosted double')[0]).not.toMatch(/^.{3}· /);
    } finally {
      await double.close();
    }
  });
});

describe('the terminal is given back', () => {
  /** The command's process: the pane's shell runs it as its child. */
  async function commandPid(tmux: Tmux): Promise<number> {
    const shell = await tmux.format('#{pane_pid}');
    const { stdout } = await run('pgrep', ['-P', shell]);
    return Number(stdout.trim().split('\n')[0]);
  }

  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    it(`on ${signal}`, async () => {
      const tmux = await terminal();
      await connected(tmux);
      process.kill(await commandPid(tmux), signal);
      const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
      expect(screen).not.toContain('connected');
      expect(await tmux.format('#{alternate_on}')).toBe('0');
      expect(await tmux.format('#{cursor_flag}')).toBe('1');
    });
  }

  it('on Ctrl-C, as a normal end', async () => {
    const tmux = await terminal();
    await connected(tmux);
    await tmux.keys('C-c');
    const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
    expect(screen).toContain('[exit 0]');
    expect(await tmux.format('#{alternate_on}')).toBe('0');
  });

  it('on a lost connection with --no-reconnect: exit 3, the reason on the primary screen', async () => {
    const proxy = await TcpProxy.start(fixture.serve.port);
    proxies.push(proxy);
    const tmux = await terminal(['--no-reconnect'], {}, proxy.url);
    await connected(tmux);
    proxy.cut();
    const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
    expect(screen).toContain('[exit 3]');
    expect(screen).toMatch(/^stream-posts: /m);
    expect(await tmux.format('#{alternate_on}')).toBe('0');
  });
});

describe('demo --terminal', () => {
  it('shows the demo full screen, and gives the terminal back when it ends', async () => {
    const tmux = await Tmux.start(['demo', '--terminal', '--port', '0', '--count', '3', '--interval', '100ms']);
    await tmux.waitFor(/● connected \(serve dialect\)/, 'the demo in the terminal');
    await tmux.waitFor((screen) => screen.split('\n').filter((line) => /^[› ] {4}\d\d:/.test(line)).length >= 3);
    await tmux.waitFor(/\[exit 0\]/, 'the end of the demo');
    expect(await tmux.format('#{alternate_on}')).toBe('0');
  });
});

describe('terminal outside a terminal', () => {
  it('exits 2 when standard input or output is not a terminal', async () => {
    const result = await runToEnd(['terminal', '--url', fixture.serve.url, '--api-key', KEYS.alice]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('terminal needs an interactive terminal; use tree or listen');
  });

  it('exits 2 naming the rule whose pattern is not a regular expression', async () => {
    const tmux = await terminal(['--alert', 'fine', '--alert', '(unclosed']);
    const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
    expect(screen).toContain('[exit 2]');
    expect(screen).toMatch(/alert rule --alert 2: not a valid regular expression/);
  });
});
