import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createChalk } from '../../src/render/style.js';
import { cutToWidth, wrapToWidth } from '../../src/render/wrap.js';

describe('wrapToWidth', () => {
  it('breaks at spaces, never inside a word, and leaves short lines alone', () => {
    expect(wrapToWidth('one two three four five six', 10)).toBe('one two\nthree four\nfive six');
    expect(wrapToWidth('short\nlines', 10)).toBe('short\nlines');
  });

  it('leaves to the terminal what would take too long to wrap: a huge line, one with many codes, and text past 32,000 characters', () => {
    const link = (url: string) => `\u001B]8;;${url}\u0007\u001B[34m${url}\u001B[39m\u001B]8;;\u0007`;
    // The shape that took over a minute: a 64 KiB line of hyperlinked URLs.
    const links = Array.from({ length: 1_500 }, () => link('https://good.example')).join(' ');
    expect(wrapToWidth(links, 100)).toBe(links);
    const prose = 'word '.repeat(2_000).trimEnd();
    expect(wrapToWidth(prose, 100)).toBe(prose);
    const styled = Array.from({ length: 120 }, () => '\u001B[1mbold\u001B[22m').join(' ');
    expect(wrapToWidth(styled, 100)).toBe(styled);
    // Lines of a long text are wrapped until 32,000 characters have been; the rest are left as they are.
    const paragraph = 'word '.repeat(1_000).trimEnd();
    const rows = wrapToWidth(Array.from({ length: 10 }, () => paragraph).join('\n'), 100).split('\n');
    expect(rows.filter((row) => row === paragraph)).toHaveLength(3);
    expect(rows.every((row) => row === paragraph || row.length <= 100)).toBe(true);
  });

  it('a word longer than the width stays whole on its own line', () => {
    expect(wrapToWidth('a https://example.org/long/address b', 10)).toBe('a\nhttps://example.org/long/address\nb');
  });

  it('continues an indented line or a list item under its text', () => {
    expect(wrapToWidth('  quoted words that go on', 12)).toBe('  quoted\n  words that\n  go on');
    expect(wrapToWidth('  * item words that go on', 14)).toBe('  * item words\n    that go on');
  });

  it('every continuation keeps the styles still open, and the text is unchanged apart from the breaks', () => {
    const c = createChalk(true);
    const styled = c.gray.italic('alpha bravo charlie delta echo foxtrot');
    const wrapped = wrapToWidth(styled, 12);
    const rows = wrapped.split('\n');
    expect(rows.map((row) => stripVTControlCharacters(row))).toEqual([
      'alpha bravo',
      'charlie',
      'delta echo',
      'foxtrot',
    ]);
    for (const row of rows.slice(1)) expect(row.startsWith('\u001B[90m\u001B[3m')).toBe(true);
  });
});

describe('cutToWidth', () => {
  it('keeps a line that fits, and cuts one that does not at the width with … , its styles still closed', () => {
    expect(cutToWidth('short', 10)).toBe('short');
    expect(cutToWidth('exactly10!', 10)).toBe('exactly10!');
    expect(cutToWidth('one column too long', 10)).toBe('one colum…');
    // Two columns a character: the cut counts columns, not characters.
    expect(stripVTControlCharacters(cutToWidth('漢字漢字漢字漢字', 9))).toBe('漢字漢字…');
    const styled = `\u001B[33m${'x'.repeat(100_000)}\u001B[39m`;
    const cut = cutToWidth(styled, 40);
    expect(stripVTControlCharacters(cut)).toBe(`${'x'.repeat(39)}…`);
    // The colour opened before the cut is closed after it, as the whole line closed it.
    expect(cut.endsWith('\u001B[39m')).toBe(true);
  });
});
