import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime } from '../../src/protocol/dates.js';

describe('isoTime', () => {
  it('writes every whole millisecond a Date can hold as toISOString does', () => {
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => {
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 10_000 },
    );
  });

  it('is right for milliseconds of one second asked in any order, and across seconds', () => {
    // The second's text is kept: going back and forth between seconds must not mix them up.
    const base = Date.UTC(2026, 10, 26, 6, 59, 59);
    for (const ms of [base + 999, base + 1000, base + 5, base + 1001, base - 1, base + 10, base + 100, base]) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('before 1970, past year 9999 and with a fraction of a millisecond, as toISOString', () => {
    for (const ms of [-1, -999, -1000, -1001, -62198755200000, 253402300800000, 253402300799999, 1.5, -0.5]) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('throws as toISOString does where no Date can hold the time', () => {
    for (const ms of [NaN, 8.64e15 + 1, Infinity]) {
      expect(() => isoTime(ms)).toThrow(RangeError);
    }
  });
});
