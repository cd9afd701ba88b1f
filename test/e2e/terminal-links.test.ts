import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEYS, publishToStream } from '../support/harness.js';
import { until } from '../support/poll.js';
import { cliFixture } from '../support/serve.js';
import { Tmux, rowsWith } from '../terminal/tmux.js';

const fixture = cliFixture('terminal-links');

let words = 0;
/** A word no other post of the shared serve has. */
const unique = (label: string) => `${label}${process.pid}x${++words}`;

/** A system opener that records each address it is asked to open, one a line. */
async function recordingOpener(): Promise<{ path: string; opened: () => Promise<string[]> }> {
  const bin = join(fixture.tmp, 'opener-bin');
  await mkdir(bin, { recursive: true });
  const record = join(fixture.tmp, 'opened');
  await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" >> '${record}'\n`);
  await chmod(join(bin, 'xdg-open'), 0o755);
  return {
    path: `${bin}:${process.env['PATH']}`,
    opened: async () => (await readFile(record, 'utf8').catch(() => '')).split('\n').filter((line) => line !== ''),
  };
}

describe('terminal links', () => {
  it('o and 1-9 open the whole address, parentheses and all; a control character ends an address', async () => {
    const opener = await recordingOpener();
    const tmux = await Tmux.start(['terminal', '--url', fixture.serve.url, '--last', '0'], {
      STREAM_POSTS_API_KEY: KEYS.alice,
      PATH: opener.path,
    });
    await tmux.waitFor(/● connected/, 'the connected header');
    /** Publishes, selects the newest post once it shows, and presses `keys`, waiting for each open. */
    const openFrom = async (text: string, tag: string, markdown: boolean, keys: string[]): Promise<string> => {
      await publishToStream(fixture.serve.url, 'macro-wire', text, markdown ? { contentType: 'markdown' } : {});
      const screen = await tmux.waitFor((shown) => shown.includes(tag), tag);
      await tmux.keys('g');
      for (const key of keys) {
        const before = (await opener.opened()).length;
        await tmux.keys(key);
        await until(async () => (await opener.opened()).length > before, `the opener, for ${key}`);
      }
      return screen;
    };

    const plain = unique('plain');
    await openFrom(`${plain} background: https://en.wikipedia.org/wiki/Bitcoin_(disambiguation).`, plain, false, ['o']);

    const marked = unique('marked');
    const screen = await openFrom(
      `[${marked} Reuters (exclusive)](https://x.example/a-(exclusive)-2025): the [Federal Reserve (US)](https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)) ![chart](<https://x.example/c (1).png>)`,
      marked,
      true,
      ['o', '2', '3'],
    );
    // The headline is what a reader sees of the markdown, read by marked's lexer.
    expect(rowsWith(screen, marked)[0]).toContain(
      `${marked} Reuters (exclusive): the Federal Reserve (US) [image: chart]`,
    );
    await tmux.keys('Enter');
    const detail = await tmux.waitFor(/links \(o or 1-9 opens/, 'the links of the detail pane');
    expect(detail).toContain('1 https://x.example/a-(exclusive)-2025');
    expect(detail).toContain('2 https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)');
    expect(detail).toContain('3 https://x.example/c%20(1).png');
    await tmux.keys('Escape');

    const joined = unique('joined');
    await openFrom(`${joined} https://evil.example/\u0007click`, joined, false, ['o']);

    expect(await opener.opened()).toEqual([
      'https://en.wikipedia.org/wiki/Bitcoin_(disambiguation)',
      'https://x.example/a-(exclusive)-2025',
      'https://en.wikipedia.org/wiki/Federal_Reserve_(United_States)',
      'https://x.example/c%20(1).png',
      'https://evil.example/',
    ]);
  });
});
