import { describe, expect, it } from 'vitest';
import { momentText, oneLine, safeLine, safeLines, terminalSafe } from '../../src/render/text.js';

const HOSTILE =
  'id\u202E\u2066txt.exe\u2069\u200B\u200D\uFEFF\u061C\u200E\u200F\u2060 \u001B]0;T\u0007\u009B2J\r\nnext';

describe('one-line sanitizing', () => {
  it('safeLine shows control, bidi and zero-width characters as a space and keeps the words on one line', () => {
    expect(safeLine(HOSTILE)).toBe('id txt.exe ]0;T 2J next');
  });

  it('oneLine is undefined when nothing visible is left', () => {
    expect(oneLine('\u200B \u202E\n\u001B')).toBeUndefined();
    expect(oneLine(' name ')).toBe('name');
  });

  it('safeLines keeps line breaks', () => {
    expect(safeLines('a\u202E\r\nb\u0007c')).toBe('a \nb c');
  });

  it('terminalSafe (post bodies) keeps bidi characters, which right-to-left text needs', () => {
    expect(terminalSafe('\u202Bשלום\u202C')).toBe('\u202Bשלום\u202C');
  });
});

describe('momentText', () => {
  const at = Date.parse('2026-11-21T12:00:00.000Z');
  const local = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  const localDate = `${local.getFullYear()}-${pad(local.getMonth() + 1)}-${pad(local.getDate())}`;
  const localClock = local.toTimeString().slice(0, 8);

  it('the time alone on the same local day; the date before it on another day', () => {
    expect(momentText(at, { now: () => at + 1000 })).toBe(localClock);
    expect(momentText(at, { now: () => at + 2 * 86_400_000 })).toBe(`${localDate} ${localClock}`);
    expect(momentText(at, { now: () => at - 2 * 86_400_000 })).toBe(`${localDate} ${localClock}`);
  });

  it('utc: UTC time and date, marked UTC', () => {
    expect(momentText(at, { utc: true, now: () => at })).toBe('12:00:00 UTC');
    expect(momentText(at, { utc: true, now: () => Date.parse('2026-11-22T00:00:00.000Z') })).toBe(
      '2026-11-21 12:00:00 UTC',
    );
  });

  it('no such time: dashes', () => {
    expect(momentText(undefined)).toBe('--:--:--');
    expect(momentText(Number.NaN, { utc: true })).toBe('--:--:--');
  });
});
