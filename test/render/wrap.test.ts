import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createChalk } from '../../src/render/style.js';
import { wrapToWidth } from '../../src/render/wrap.js';

describe('wrapToWidth', () => {
  it('breaks at spaces, never inside a word, and leaves short lines alone', () => {
    expect(wrapToWidth('one two three four five six', 10)).toBe('one two\nthree four\nfive six');
    expect(wrapToWidth('short\nlines', 10)).toBe('short\nlines');
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
