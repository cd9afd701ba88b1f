import { describe, expect, it } from 'vitest';
import { oneLine, safeLine, safeLines, terminalSafe } from '../../src/render/text.js';

const HOSTILE =
  'id\u202E\u2066txt.exe\u2069\u200B\u200D\uFEFF\u061C\u200E\u200F\u2060 \u001B]0;T\u0007\u009B2J\r\nnext';

describe('one-line sanitizing', () => {
  it('safeLine removes control, bidi and zero-width characters and keeps the words on one line', () => {
    expect(safeLine(HOSTILE)).toBe('idtxt.exe ]0;T2J next');
  });

  it('oneLine is undefined when nothing visible is left', () => {
    expect(oneLine('\u200B \u202E\n\u001B')).toBeUndefined();
    expect(oneLine(' name ')).toBe('name');
  });

  it('safeLines keeps line breaks', () => {
    expect(safeLines('a\u202E\r\nb\u0007')).toBe('a\nb');
  });

  it('terminalSafe (post bodies) keeps bidi characters, which right-to-left text needs', () => {
    expect(terminalSafe('\u202Bשלום\u202C')).toBe('\u202Bשלום\u202C');
  });
});
