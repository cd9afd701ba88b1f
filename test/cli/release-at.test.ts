import { afterEach, describe, expect, it } from 'vitest';
import { formatReleaseTime, pastReleaseAt, resolveReleaseAt, serviceClock } from '../../src/cli/release-at.js';
import { validatePost } from '../../src/cli/validate-post.js';
import { checkContent, checkExtraArguments } from '../../src/cli/post-content.js';

const zone = process.env['TZ'];
afterEach(() => {
  if (zone === undefined) delete process.env['TZ'];
  else process.env['TZ'] = zone;
});

describe('release times', () => {
  const now = Date.parse('2026-11-23T13:50:12.345Z');

  it('a relative time counts from the given now, to the whole second above, never below', () => {
    expect(resolveReleaseAt('+10m', now)).toBe('2026-11-23T14:00:13.000Z');
    expect(resolveReleaseAt(' +1.5h ', now)).toBe('2026-11-23T15:20:13.000Z');
    expect(resolveReleaseAt('+3s', now)).toBe('2026-11-23T13:50:16.000Z');
    // On a whole second already: nothing to round.
    expect(resolveReleaseAt('+3s', Date.parse('2026-11-23T13:50:12.000Z'))).toBe('2026-11-23T13:50:15.000Z');
    expect(resolveReleaseAt('2026-12-01T09:00:00Z', now)).toBe('2026-12-01T09:00:00Z');
  });

  it("the service's clock runs on from its serverTime; without one it is ours", () => {
    const offset = Date.parse('2030-01-01T00:00:00Z') - Date.parse('2026-01-01T00:00:00Z');
    const clocks = [
      [serviceClock('2030-01-01T00:00:00Z', Date.parse('2026-01-01T00:00:00Z')), offset],
      [serviceClock(undefined), 0],
    ] as const;
    for (const [clock, expected] of clocks) {
      const before = Date.now();
      const value = clock();
      const after = Date.now();
      expect(value).toBeGreaterThanOrEqual(before + expected);
      expect(value).toBeLessThanOrEqual(after + expected);
    }
  });

  it('shows the time in the local zone with the zone, seconds only when it has them', () => {
    process.env['TZ'] = 'UTC';
    expect(formatReleaseTime('2026-11-23T14:00:00.000Z')).toBe('2026-11-23 14:00 UTC');
    expect(formatReleaseTime('2026-11-23T14:00:12.000Z')).toBe('2026-11-23 14:00:12 UTC');
    expect(formatReleaseTime('2026-11-23T14:00:00.250Z')).toBe('2026-11-23 14:00:00.250 UTC');
    expect(formatReleaseTime('2026-11-23T14:00:00Z', { sameDay: true, now })).toBe('14:00 UTC');
    expect(formatReleaseTime('2026-11-24T14:00:00Z', { sameDay: true, now })).toBe('2026-11-24 14:00 UTC');
    process.env['TZ'] = 'Asia/Kolkata';
    expect(formatReleaseTime('2026-11-23T14:00:00Z')).toBe('2026-11-23 19:30 +05:30');
    process.env['TZ'] = 'America/New_York';
    expect(formatReleaseTime('2026-11-23T14:00:00Z')).toBe('2026-11-23 09:00 -05:00');
  });

  it('a time at or before now is in the past; a later one is not', () => {
    process.env['TZ'] = 'UTC';
    expect(pastReleaseAt('2026-11-23T13:50:12.345Z', now)).toMatch(
      /^--release-at 2026-11-23 13:50:12\.345 UTC: release time is in the past \(the service's time is 2026-11-23 13:50:12 UTC\)/,
    );
    expect(pastReleaseAt('2026-11-23T13:50:13Z', now)).toBeUndefined();
  });

  it('validatePost names the flags and refuses the past unless allowed', () => {
    const rules = { stream: 'macro-wire', contentType: 'rawtext' as const, allowPast: false };
    expect(() => validatePost({ content: 'x', releaseAt: 'soon' }, rules, now)).toThrow(
      /^invalid post: --release-at must be an ISO 8601 date-time with a time zone.*\+10m/,
    );
    expect(() => validatePost({ content: 'x', customTarget: 5 }, rules, now)).toThrow(/--custom-target/);
    expect(() => validatePost({ content: 'x', releaseAt: '2020-01-01T00:00:00Z' }, rules, now)).toThrow(
      'release time is in the past',
    );
    expect(
      validatePost({ content: 'x', releaseAt: '2020-01-01T00:00:00Z' }, { ...rules, allowPast: true }, now),
    ).toMatchObject({
      streamId: 'macro-wire',
      releaseAt: '2020-01-01T00:00:00Z',
    });
  });
});

describe('content checks', () => {
  it('refuses empty and whitespace-only content, and words beyond the first argument', () => {
    expect(() => checkContent('')).toThrow('the content is empty');
    expect(() => checkContent(' \n\t')).toThrow('the content is only whitespace');
    expect(() => checkContent(' x ')).not.toThrow();
    expect(() => checkExtraArguments(['holds', 'rates'])).toThrow('3 were given: quote it');
    expect(() => checkExtraArguments([])).not.toThrow();
  });
});
