import { describe, expect, it } from 'vitest';
import { formatPost, type PostView } from '../../src/render/posts.js';
import { streamColour } from '../../src/render/style.js';
import { samplePost } from '../support/fixtures.js';

const ESC = /\u001B/;
const localTime = (iso: string) => new Date(iso).toTimeString().slice(0, 8);
const created = '2026-11-21T12:00:00.000Z';
// "Today" is the day of the sample post, unless a test says otherwise.
const sameDay = () => Date.parse(created);
const plain: PostView = { color: false, hyperlinks: false, now: sameDay };
const coloured: PostView = { color: true, hyperlinks: false, now: sameDay };
const releaseAt = '2026-11-21T15:30:00.000Z';
const hiddenPost = samplePost({ text: null, hidden: true, releaseAt });
const releasedPost = samplePost({ text: 'The **ruling** is out', hidden: false, releaseAt });

describe('formatPost, plain', () => {
  it.each<[string, Parameters<typeof formatPost>, string[]]>([
    [
      'a post',
      [samplePost(), 'created', plain],
      [`${localTime(created)} Crypto Legal Updates`, 'SEC v. Binance: stipulation of dismissal filed'],
    ],
    [
      'markdown stays as sent without a renderer (in a pipe)',
      [samplePost({ text: '# Big\n\n- **one**\n- [two](https://example.org)' }), 'created', plain],
      [`${localTime(created)} Crypto Legal Updates`, '# Big', '', '- **one**', '- [two](https://example.org)'],
    ],
    [
      'a custom target',
      [samplePost({ customTarget: 'vip' }), 'created', plain],
      [`${localTime(created)} Crypto Legal Updates -> vip`, 'SEC v. Binance: stipulation of dismissal filed'],
    ],
    [
      'a hidden post',
      [hiddenPost, 'created', plain],
      [`${localTime(created)} Crypto Legal Updates`, `[hidden until ${releaseAt}]`],
    ],
    [
      'a hidden post without a release time',
      [samplePost({ text: null, hidden: true }), 'created', plain],
      [`${localTime(created)} Crypto Legal Updates`, '[hidden]'],
    ],
    [
      'a release, at its release time',
      [releasedPost, 'released', plain],
      [`${localTime(releaseAt)} Crypto Legal Updates [released]`, 'The **ruling** is out'],
    ],
    [
      '--match changes nothing',
      [samplePost(), 'created', { ...plain, match: /Binance/ }],
      [`${localTime(created)} Crypto Legal Updates`, 'SEC v. Binance: stipulation of dismissal filed'],
    ],
    [
      'trailing newlines dropped',
      [samplePost({ text: 'one\ntwo\n\n' }), 'created', plain],
      [`${localTime(created)} Crypto Legal Updates`, 'one', 'two'],
    ],
    [
      'an unparsable date',
      [samplePost({ createdAt: 'yesterday' }), 'created', plain],
      ['--:--:-- Crypto Legal Updates', 'SEC v. Binance: stipulation of dismissal filed'],
    ],
  ])('%s', (_name, args, lines) => {
    const text = formatPost(...args);
    expect(text).toBe(lines.join('\n'));
    expect(text).not.toMatch(ESC);
  });

  it('strips escape sequences sent in the text, the stream name or the target', () => {
    const text = formatPost(
      samplePost({ text: 'a\u001B[2Jb', streamName: 'x\u001B]0;t\u0007y', customTarget: '\u009Bv' }),
      'created',
      { ...plain, hyperlinks: true },
    );
    expect(text).not.toMatch(/[\u001B\u0007\u009B]/);
    // Each removed character leaves a space: nothing it stood between is joined.
    expect(text).toContain('x ]0;t y -> v');
  });
});

describe('formatPost: times', () => {
  const at = Date.parse(created);

  it('a post from another day shows its date; from today, its time only', () => {
    const header = (now: number) => formatPost(samplePost(), 'created', { ...plain, now: () => now }).split('\n')[0];
    expect(header(at + 60_000)).toBe(`${localTime(created)} Crypto Legal Updates`);
    const local = new Date(at);
    const date = `${local.getFullYear()}-${String(local.getMonth() + 1).padStart(2, '0')}-${String(local.getDate()).padStart(2, '0')}`;
    expect(header(at + 3 * 86_400_000)).toBe(`${date} ${localTime(created)} Crypto Legal Updates`);
  });

  it('utc: times in UTC, marked so, the date when it is not the UTC today', () => {
    const view = { ...plain, utc: true };
    expect(formatPost(samplePost(), 'created', { ...view, now: () => at }).split('\n')[0]).toBe(
      '12:00:00 UTC Crypto Legal Updates',
    );
    expect(formatPost(samplePost(), 'created', { ...view, now: () => at + 86_400_000 }).split('\n')[0]).toBe(
      '2026-11-21 12:00:00 UTC Crypto Legal Updates',
    );
    expect(formatPost(hiddenPost, 'created', { ...coloured, utc: true, now: () => at })).toContain(
      '🔒 hidden until 15:30:00 UTC',
    );
  });
});

describe('formatPost: width', () => {
  const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima';

  it('on a terminal, rawtext wraps at word boundaries to the width', () => {
    const post = samplePost({ contentType: 'rawtext', text: words });
    for (const view of [plain, coloured]) {
      const body = formatPost(post, 'created', { ...view, width: 20 })
        .split('\n')
        .slice(1);
      expect(body.map((line) => line.replace(/\u001B\[[0-9;]*m/g, ''))).toEqual([
        'alpha bravo charlie',
        'delta echo foxtrot',
        'golf hotel india',
        'juliett kilo lima',
      ]);
    }
  });

  it('without a width (a pipe), the text stays as sent', () => {
    expect(formatPost(samplePost({ contentType: 'rawtext', text: words }), 'created', plain).split('\n')[1]).toBe(
      words,
    );
  });
});

describe('formatPost, colour', () => {
  it('renders markdown with the given renderer and colours the stream name by id', () => {
    const text = formatPost(samplePost(), 'created', { ...coloured, markdown: (md) => `<${md}>` });
    expect(text).toContain('<SEC v. Binance: stipulation of dismissal filed>');
    const colourCode = { cyan: 36, green: 32, yellow: 33, magenta: 35, blueBright: 94, redBright: 91 }[
      streamColour(samplePost().streamId)
    ];
    expect(text).toContain(`\u001B[${colourCode}m\u001B[1mCrypto Legal Updates`);
  });

  it('does not use the markdown renderer for rawtext', () => {
    expect(
      formatPost(samplePost({ contentType: 'rawtext' }), 'created', { ...coloured, markdown: () => 'RENDERED' }),
    ).not.toContain('RENDERED');
  });

  it('shows a hidden post as a locked line with the local release time', () => {
    const text = formatPost(hiddenPost, 'created', { ...coloured, now: () => Date.parse(created) });
    expect(text).toContain(`🔒 hidden until ${localTime(releaseAt)}`);
    expect(formatPost(hiddenPost, 'created', { ...coloured, now: () => Date.parse(created) + 3 * 86_400_000 })).toMatch(
      /🔒 hidden until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/,
    );
  });

  it('marks a release and shows its text', () => {
    const text = formatPost(releasedPost, 'released', { ...coloured, markdown: (md) => md.replace(/\*\*/g, '') });
    expect(text).toContain('🔓 released');
    expect(text).toContain('The ruling is out');
  });

  it('highlights every match, also inside rendered markdown, without breaking escape codes', () => {
    const text = formatPost(samplePost({ text: 'm m' }), 'created', {
      ...coloured,
      markdown: () => '\u001B[1mm\u001B[22m m',
      match: /m/,
    });
    expect(text.split('\n')[1]).toBe('\u001B[1m\u001B[7mm\u001B[27m\u001B[22m \u001B[7mm\u001B[27m');
  });

  it('with hyperlinks, URLs in rawtext become OSC 8 links', () => {
    const post = samplePost({ contentType: 'rawtext', text: 'see https://example.org/a, then https://example.org/b.' });
    expect(formatPost(post, 'created', { ...coloured, hyperlinks: true }).split('\n')[1]).toBe(
      'see \u001B]8;;https://example.org/a\u0007https://example.org/a\u001B]8;;\u0007, then \u001B]8;;https://example.org/b\u0007https://example.org/b\u001B]8;;\u0007.',
    );
    expect(formatPost(post, 'created', coloured)).not.toContain('\u001B]8;;');
  });

  it('a hyperlinked URL ends at a bidi or zero-width character, which would make it read as another', () => {
    const post = samplePost({ contentType: 'rawtext', text: 'see https://good.example/\u202Eelpmaxe.live\u200B now' });
    expect(formatPost(post, 'created', { ...coloured, hyperlinks: true }).split('\n')[1]).toBe(
      'see \u001B]8;;https://good.example/\u0007https://good.example/\u001B]8;;\u0007\u202Eelpmaxe.live\u200B now',
    );
  });
});

describe('streamColour', () => {
  it('is stable per stream and spreads streams over several colours', () => {
    expect(streamColour('01J366WJBXF6BN036SXVNRAP8A')).toBe(streamColour('01J366WJBXF6BN036SXVNRAP8A'));
    const colours = new Set(Array.from({ length: 40 }, (_, index) => streamColour(`stream-${index}`)));
    expect(colours.size).toBeGreaterThanOrEqual(5);
  });
});
