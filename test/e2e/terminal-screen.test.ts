import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CONTENT_BYTES } from '../../src/protocol/limits.js';
import { KEYS, publishToStream } from '../support/harness.js';
import { until } from '../support/poll.js';
import { TcpProxy } from '../support/proxy.js';
import { cliFixture } from '../support/serve.js';
import { rowsWith, styleOf, Tmux } from '../terminal/tmux.js';

const run = promisify(execFile);
const fixture = cliFixture('terminal-screen');
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});

let words = 0;
/** A word no other post of the shared serve has. */
const unique = (label: string) => `${label}${process.pid}x${++words}`;

/** `terminal` as alice against the file's serve (or `url`). */
function terminal(
  args: string[] = [],
  env: Record<string, string> = {},
  url = fixture.serve.url,
  size?: { x: number; y: number },
  options?: Record<string, string>,
): Promise<Tmux> {
  return Tmux.start(
    ['terminal', '--url', url, '--last', '0', ...args],
    { STREAM_POSTS_API_KEY: KEYS.alice, ...env },
    size,
    options,
  );
}

async function connected(tmux: Tmux): Promise<string> {
  return tmux.waitFor(/● connected/, 'the connected header');
}

function post(stream: string, text: string, extra: Record<string, unknown> = {}) {
  return publishToStream(fixture.serve.url, stream, text, extra);
}

/** The command's process: the pane's shell runs it as its child. */
async function commandPid(tmux: Tmux): Promise<number> {
  const shell = await tmux.format('#{pane_pid}');
  const { stdout } = await run('pgrep', ['-P', shell]);
  return Number(stdout.trim().split('\n')[0]);
}

/** What the program writes to the pane from now on, as a function that reads it so far. */
async function pipedOutput(tmux: Tmux, name: string): Promise<() => Promise<string>> {
  const output = join(fixture.tmp, `${name}-${unique('pipe')}`);
  await tmux.tmux('pipe-pane', '-o', `cat >> '${output}'`);
  return () => readFile(output, 'utf8').catch(() => '');
}

/** A process's state letter as ps shows it (`T` stopped, `S` sleeping, `R` running). */
async function processState(pid: number): Promise<string> {
  const { stdout } = await run('ps', ['-o', 'stat=', '-p', String(pid)]);
  return stdout.trim().charAt(0);
}

describe('terminal: the screen it needs', () => {
  it('exits 2 on a terminal without cursor addressing (TERM=dumb), never taking the screen', async () => {
    const tmux = await terminal([], { TERM: 'dumb' });
    const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
    expect(screen).toContain('[exit 2]');
    expect(screen).toContain('terminal needs a terminal with cursor addressing; use tree or listen');
    expect(screen).toContain('primary screen');
    expect(await tmux.format('#{alternate_on}')).toBe('0');
  });
});

describe('terminal: Ctrl-Z', () => {
  it('gives the terminal back and stops the job; fg takes the screen again and redraws it', async () => {
    const tmux = await Tmux.startInShell(['terminal', '--url', fixture.serve.url, '--last', '0'], {
      STREAM_POSTS_API_KEY: KEYS.alice,
    });
    await connected(tmux);
    const before = unique('before');
    await post('macro-wire', before);
    await tmux.waitFor((screen) => screen.includes(before), before);
    const pid = await commandPid(tmux);
    await tmux.keys('C-z');
    await tmux.waitForFormat('#{alternate_on}', '0');
    expect(await tmux.format('#{cursor_flag}')).toBe('1');
    await waitForState(pid, 'T');
    // The shell has the terminal, its line editing and its prompt.
    await tmux.waitFor(/Stopped[\s\S]*^\$$/m, "the shell's prompt");
    await tmux.type('fg');
    await tmux.keys('Enter');
    await tmux.waitForFormat('#{alternate_on}', '1');
    const screen = await tmux.waitFor((text) => text.includes(before) && /● connected/.test(text), 'the redrawn feed');
    expect(screen).not.toContain('Stopped');
    // Keys act again, as keys: the terminal is back in raw mode.
    await tmux.keys('?');
    await tmux.waitFor(/^Keys/m, 'the keys overlay');
    await tmux.keys('Escape', 'q');
    await tmux.waitForFormat('#{alternate_on}', '0');
    await tmux.type('echo "[exit $?]"');
    await tmux.keys('Enter');
    await tmux.waitFor(/^\[exit 0\]/m, 'the exit status');
  });
});

describe('terminal: stopped from outside', () => {
  it('SIGTSTP gives the terminal back and stops the job, as Ctrl-Z does; fg takes the screen again', async () => {
    const tmux = await Tmux.startInShell(['terminal', '--url', fixture.serve.url, '--last', '0'], {
      STREAM_POSTS_API_KEY: KEYS.alice,
    });
    await connected(tmux);
    const pid = await commandPid(tmux);
    process.kill(pid, 'SIGTSTP');
    await tmux.waitForFormat('#{alternate_on}', '0');
    await waitForState(pid, 'T');
    await tmux.waitFor(/Stopped[\s\S]*^\$$/m, "the shell's prompt");
    await tmux.type('fg');
    await tmux.keys('Enter');
    await tmux.waitForFormat('#{alternate_on}', '1');
    await connected(tmux);
    // And again: the stop is handled each time.
    await tmux.keys('C-z');
    await tmux.waitForFormat('#{alternate_on}', '0');
    await waitForState(pid, 'T');
  });

  it('Ctrl-Z where no shell has job control says so and keeps the screen', async () => {
    const tmux = await terminal();
    await connected(tmux);
    await tmux.keys('C-z');
    await tmux.waitFor(/cannot be suspended/, 'the reason');
    expect(await tmux.format('#{alternate_on}')).toBe('1');
    await tmux.keys('?');
    await tmux.waitFor(/^Keys/m, 'keys acting');
  });
});

describe('terminal: reconnecting', () => {
  async function behindProxy(): Promise<[Tmux, TcpProxy]> {
    const proxy = await TcpProxy.start(fixture.serve.port);
    proxies.push(proxy);
    const tmux = await terminal([], {}, proxy.url);
    await connected(tmux);
    return [tmux, proxy];
  }

  it('waits at most 5 s between attempts, says when the next one is, in the warning colour', async () => {
    const [tmux, proxy] = await behindProxy();
    proxy.refuse(true);
    proxy.cut();
    // Every countdown the header shows until the seventh attempt, whose wait would be 8-16 s uncapped.
    const waits = new Set<number>();
    let header = '';
    await until(
      async () => {
        header = (await tmux.screen(true)).split('\n')[0]!;
        const shown = /reconnecting \(attempt (\d+), next in (\d+)s/.exec(header.replace(/\u001B\[[0-9;]*m/g, ''));
        if (shown !== null) waits.add(Number(shown[2]));
        return shown !== null && Number(shown[1]) >= 7;
      },
      'the seventh attempt',
      25_000,
    );
    expect(Math.max(...waits)).toBeLessThanOrEqual(5);
    const warning = styleOf(header, 'reconnecting')!;
    expect(warning).toMatchObject({ bg: '43', fg: '30', inverse: false });
    proxy.refuse(false);
    const back = await tmux.waitFor(/● connected/, 'connected again', true);
    expect(styleOf(back, 'connected')).toMatchObject({ inverse: true, bg: undefined });
  }, 40_000);

  it('r while the service is down tries again at once and keeps trying; r connects once it is back', async () => {
    const [tmux, proxy] = await behindProxy();
    proxy.refuse(true);
    proxy.cut();
    await tmux.waitFor(/reconnecting \(attempt [3-9]/, 'the third attempt');
    await tmux.keys('r');
    // A new connection of its own, refused: the count starts again, and the terminal goes on.
    await tmux.waitFor(/reconnecting \(attempt 1, next in/, 'a fresh first attempt');
    await tmux.waitFor(/reconnecting \(attempt [2-9]/, 'the next attempt after it');
    proxy.refuse(false);
    await tmux.keys('r');
    await connected(tmux);
    const after = unique('after');
    await post('macro-wire', after);
    await tmux.waitFor((screen) => screen.includes(after), after);
  });
});

describe('terminal: the detail pane', () => {
  /** The pane's rows: the lines under its rule, but the footer. */
  const paneOf = (screen: string) => {
    const lines = screen.split('\n');
    const rule = lines.findIndex((line) => /^─+$/.test(line));
    return rule < 0 ? [] : lines.slice(rule + 1, -2);
  };

  it('wraps every paragraph of the largest post in full, and its scroll stops at the end', async () => {
    const tag = unique('long');
    // Paragraphs of words, each ending in its own mark, up to the most the service accepts.
    const paragraphs: string[] = [`# ${tag}`];
    let bytes = paragraphs[0]!.length;
    for (let index = 1; ; index++) {
      const paragraph = `${Array.from({ length: 80 }, (_, word) => `w${index}x${word}`).join(' ')} end${index}.`;
      if (bytes + 2 + paragraph.length > MAX_CONTENT_BYTES) break;
      paragraphs.push(paragraph);
      bytes += 2 + paragraph.length;
    }
    const text = `${paragraphs.join('\n\n')}\n\n${'z'.repeat(MAX_CONTENT_BYTES - bytes - 2)}`;
    expect(Buffer.byteLength(text)).toBe(MAX_CONTENT_BYTES);
    const last = paragraphs.length - 1;
    await post('macro-wire', text, { contentType: 'markdown' });
    const tmux = await terminal(['--last', '1']);
    await tmux.waitFor((screen) => screen.includes(tag), tag);
    await tmux.keys('Enter');
    await tmux.waitFor(/w1x0 w1x1/, 'the pane');
    // Far past the end: the pane stops at its last row.
    await tmux.tmux('send-keys', '-N', '3000', 'J');
    const end = await tmux.waitFor((screen) => paneOf(screen).some((line) => line.includes(`end${last}.`)), 'the end');
    const pane = paneOf(end);
    // The last paragraphs, far past the middle of the text, wrap as the first ones do.
    const words = pane.join(' ').split(/\s+/);
    for (let word = 0; word < 80; word++) expect(words).toContain(`w${last}x${word}`);
    for (const line of pane) expect(line).not.toMatch(/…$/);
    const top = pane.find((line) => line.trim() !== '')!;
    // One K scrolls one row back at once: the row at the top moves down one.
    await tmux.keys('K');
    const back = await tmux.waitFor((screen) => paneOf(screen).indexOf(top) > pane.indexOf(top), 'one row back');
    expect(paneOf(back).indexOf(top)).toBe(pane.indexOf(top) + 1);
  });
});

describe('terminal: small windows', () => {
  it('too small: the sizes whole at any width, and no key acts; at 60 columns the state, the clock, whole words', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const posts = [unique('first'), unique('second'), unique('third')];
    for (const text of posts) await post('macro-wire', text);
    await tmux.waitFor((screen) => screen.includes(posts[2]!), posts[2]!);
    for (const width of [50, 30, 16]) {
      await tmux.resize(width, 12);
      const small = await tmux.waitFor((screen) => screen.includes(`${width}×12`), `the size ${width}×12`);
      expect(small).toContain('60×15');
      for (const line of small.split('\n')) expect(line.length).toBeLessThanOrEqual(width);
    }
    await tmux.keys('j', 'j', 'G', 'Enter');
    await tmux.waitFor(/4 keys ignored/, 'the keys ignored');
    await tmux.resize(120, 40);
    const back = await tmux.waitFor(/● connected/, 'the feed again');
    // Still the newest selected, no detail pane: none of the keys acted.
    expect(back.split('\n')[1]).toMatch(new RegExp(`^›.*${posts[2]!}`));
    expect(back).not.toMatch(/^─+$/m);

    await tmux.resize(60, 20);
    const narrow = await tmux.waitFor(
      (screen) => (screen.split('\n')[0] ?? '').length <= 60 && /connected/.test(screen),
    );
    const header = narrow.split('\n')[0]!;
    const state = header.indexOf('● connected');
    const clock = header.search(/\d\d:\d\d:\d\d/);
    expect(state).toBeGreaterThanOrEqual(0);
    expect(clock).toBeGreaterThan(state);
    const footer = narrow.split('\n').findLast((line) => line.trim() !== '')!;
    expect(footer).toMatch(/q quit\s*$/);
    expect(footer).not.toContain('…');
  });
});

describe('terminal: bells and notifications', () => {
  /** BELs of their own: not those that end an OSC sequence. */
  const bells = (written: string) =>
    written.replace(/\u001B\][^\u0007\u001B]*(?:\u0007|\u001B\\)/g, '').split('\u0007').length - 1;

  it('a burst of matching posts rings the bell at most once a second; each notify post is notified once', async () => {
    const config = join(fixture.tmp, 'notify-config');
    await mkdir(join(config, 'stream-posts'), { recursive: true });
    await writeFile(
      join(config, 'stream-posts', 'config.json'),
      JSON.stringify({ profiles: { default: { alerts: [{ match: 'tellme', action: 'notify' }] } } }),
    );
    const tmux = await terminal(['--alert', 'ringme'], { XDG_CONFIG_HOME: config });
    await connected(tmux);
    const written = await pipedOutput(tmux, 'bells');
    const began = Date.now();
    const count = 40;
    const rung = Array.from({ length: count }, () => unique('ringme'));
    const told = Array.from({ length: 5 }, () => unique('tellme'));
    for (const text of [...rung, ...told]) await post('macro-wire', text);
    await tmux.waitFor((screen) => screen.includes(told[told.length - 1]!), 'the last post');
    await until(async () => (await written()).split('\u001B]9;').length - 1 === told.length, 'the notifications');
    const seconds = (Date.now() - began) / 1000;
    const output = await written();
    // One bell to start with, then at most one for each second that passed.
    expect(bells(output)).toBeGreaterThanOrEqual(1);
    expect(bells(output)).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    expect(bells(output)).toBeLessThan(count);
    for (const text of told) {
      // Through tmux's passthrough, every ESC inside doubled.
      expect(output).toContain(
        `\u001BPtmux;\u001B\u001B]9;Macro Wire: ${text}\u0007\u001B\u001B]777;notify;Macro Wire;${text}\u0007\u001B\\`,
      );
      expect(output.split(`\u001B]9;Macro Wire: ${text}`).length - 1).toBe(1);
      expect(output.split(`\u001B]777;notify;Macro Wire;${text}`).length - 1).toBe(1);
    }
  });
});

describe('terminal: the clipboard', () => {
  it('inside tmux, y sends OSC 52 through the passthrough and says it was sent, naming the settings', async () => {
    const tmux = await terminal();
    await connected(tmux);
    const written = await pipedOutput(tmux, 'clipboard');
    const url = `https://example.org/${unique('copy')}`;
    await post('macro-wire', `see ${url}`);
    await tmux.waitFor((screen) => screen.includes(url) || screen.includes('🔗1'), 'the post');
    await tmux.keys('y');
    const said = await tmux.waitFor(/sent to the terminal/, 'the message');
    expect(said).toMatch(/link sent to the terminal .*set-clipboard on or allow-passthrough on.*: https:/);
    expect(said).not.toMatch(/copied/);
    const osc = `\u001BPtmux;\u001B\u001B]52;c;${Buffer.from(url).toString('base64')}\u0007\u001B\\`;
    await until(async () => (await written()).includes(osc), 'OSC 52 in the passthrough');
  });

  it('outside a multiplexer OSC 52 goes as it is; Y on a hidden post sends nothing and says there is no text yet', async () => {
    const tmux = await terminal([], { TMUX: '' });
    await connected(tmux);
    const written = await pipedOutput(tmux, 'clipboard-plain');
    const text = unique('plain');
    await post('macro-wire', text);
    await tmux.waitFor((screen) => screen.includes(text), text);
    await tmux.keys('Y');
    await tmux.waitFor(/^text sent to the terminal's clipboard \(OSC 52\)/m, 'the message');
    const osc = `\u001B]52;c;${Buffer.from(text).toString('base64')}\u0007`;
    await until(async () => (await written()).includes(osc), 'OSC 52');
    expect(await written()).not.toContain('\u001BPtmux;');
    await post('macro-wire', unique('secret'), { releaseAt: new Date(Date.now() + 3_600_000).toISOString() });
    await tmux.waitFor((screen) => /^›.*🔒/m.test(screen), 'the hidden post selected');
    await tmux.keys('Y');
    await tmux.waitFor(/no text yet/, 'no text yet');
    expect((await written()).split('\u001B]52;').length - 1).toBe(1);
  });
});

describe('terminal: colours for the background', () => {
  /** A profile whose rule highlights posts saying `hilite`. */
  async function highlightConfig(): Promise<string> {
    const config = join(fixture.tmp, 'highlight-config');
    await mkdir(join(config, 'stream-posts'), { recursive: true });
    await writeFile(
      join(config, 'stream-posts', 'config.json'),
      JSON.stringify({ profiles: { default: { alerts: [{ match: 'hilite', action: 'highlight' }] } } }),
    );
    return config;
  }

  /** A post with a coin tag and a link, then one more so it is not the selected row; its screen in colour. */
  async function tagged(tmux: Tmux, word: string): Promise<{ coin: string; url: string; screen: string }> {
    await connected(tmux);
    const tag = unique(word);
    const coin = `$ZQ${String.fromCharCode(65 + (words % 26))}W`;
    const url = `https://example.org/${tag}`;
    await post('macro-wire', `${tag} hilite\n\n${coin} ${url}`);
    const newest = unique('newest');
    await post('macro-wire', newest);
    const screen = await tmux.waitFor((text) => text.includes(newest) && text.includes(tag), tag, true);
    return { coin, url, screen };
  }

  /** The detail pane of the row below the selected one, in colour, once its links are listed. */
  async function detailOfNext(tmux: Tmux): Promise<string> {
    await tmux.keys('j', 'Enter');
    return tmux.waitFor(/links \(o or 1-9/, 'the links', true);
  }

  it('dark by default: tags readable on a highlighted row, links bright blue', async () => {
    const tmux = await terminal([], { XDG_CONFIG_HOME: await highlightConfig(), COLORFGBG: '' });
    const { coin, url, screen } = await tagged(tmux, 'dark');
    // The highlighted row is black on yellow, its tags too: never yellow on yellow.
    expect(styleOf(screen, coin)).toMatchObject({ bg: '43', fg: '30' });
    const detail = await detailOfNext(tmux);
    expect(styleOf(detail, url, 'last')).toMatchObject({ fg: '94', underline: true });
    // A markdown post's links, drawn by the markdown renderer, too.
    const label = unique('label');
    await post('macro-wire', `markdown [${label}](https://example.org/md)`, { contentType: 'markdown' });
    await tmux.keys('g');
    const rendered = await tmux.waitFor(
      (text) => new RegExp(`^ markdown ${label} \\(https`, 'm').test(text.replace(/\u001B\[[0-9;]*m/g, '')),
      'the rendered link',
      true,
    );
    expect(styleOf(rendered, label, 'last')).toMatchObject({ fg: '94' });
  });

  it('--theme light: tags and links in colours that read on white', async () => {
    const tmux = await terminal(['--theme', 'light']);
    const { coin, url, screen } = await tagged(tmux, 'light');
    expect(styleOf(screen, coin)).toMatchObject({ fg: '35' });
    expect(['33', '36', '93', '96']).not.toContain(styleOf(screen, 'Macro Wire')!.fg);
    const detail = await detailOfNext(tmux);
    expect(styleOf(detail, url, 'last')).toMatchObject({ fg: '34', underline: true });
    // The header's news in black on a colour, not a colour turned into the background behind white.
    await tmux.keys('Space');
    const paused = await tmux.waitFor(/PAUSED 0 new/, 'paused', true);
    expect(styleOf(paused, 'PAUSED')).toMatchObject({ bg: '43', fg: '30', inverse: false });
  });

  it("takes the light theme from the terminal's answer to OSC 11, else from COLORFGBG", async () => {
    const answered = await terminal([], { COLORFGBG: '15;0' }, fixture.serve.url, undefined, {
      'window-style': 'bg=#f0f0f0',
    });
    expect(styleOf((await tagged(answered, 'answered')).screen, '$ZQ')).toMatchObject({ fg: '35' });
    await answered.kill();
    const fromEnv = await terminal([], { COLORFGBG: '0;15' });
    expect(styleOf((await tagged(fromEnv, 'colorfgbg')).screen, '$ZQ')).toMatchObject({ fg: '35' });
    await fromEnv.kill();
    const neither = await terminal([], { COLORFGBG: '' });
    expect(styleOf((await tagged(neither, 'neither')).screen, '$ZQ')).toMatchObject({ fg: '33' });
  });

  it('--theme takes only dark or light', async () => {
    const tmux = await terminal(['--theme', 'blue']);
    const screen = await tmux.waitFor(/\[exit \d+\]/, 'the exit');
    expect(screen).toContain('[exit 2]');
    expect(screen).toMatch(/--theme.*blue.*dark, light/s);
  });
});

describe('terminal: age and latency', () => {
  it("rows show their age, ticking while on screen; the pane and the header show the feed's latency", async () => {
    const tmux = await terminal();
    await connected(tmux);
    const text = unique('aged');
    await post('macro-wire', text);
    const ageOf = (screen: string) => /\d\d:\d\d:\d\d +(\d+)s Macro Wire/.exec(rowsWith(screen, text)[0] ?? '')?.[1];
    const first = Number(ageOf(await tmux.waitFor((screen) => ageOf(screen) !== undefined, 'an age')));
    await tmux.waitFor((screen) => Number(ageOf(screen)) > first, 'the age a second later');
    // On the service's clock as this terminal reckons it: a few ms either way.
    const header = (await tmux.waitFor(/latency -?\d+ ms/, 'the median latency')).split('\n')[0]!;
    expect(header.indexOf('latency')).toBeGreaterThan(header.search(/\d\d:\d\d:\d\d/));
    await tmux.keys('Enter');
    await tmux.waitFor(
      /^ \d\d:\d\d:\d\d Macro Wire arrived \d\d:\d\d:\d\d, latency -?\d+ ms$/m,
      'created, arrived, latency',
    );
  });
});

async function waitForState(pid: number, state: string): Promise<void> {
  await until(async () => (await processState(pid)) === state, `process ${pid} in state ${state}`);
}
