import { describe, expect, it } from 'vitest';
import { bindPlaceholders, differences, fitsRecorded, IgnoredFields } from '../../src/server/replay/match.js';

describe('matching a live value to a recorded one', () => {
  it.each([
    ['login <key-1>', 'login 3f1c', true],
    ['login <key-1>', 'login ', false],
    ['/v1/ws/<key-1>', '/v1/ws/k', true],
    ['/v1/ws/<key-1>', '/v1/ws/', false],
    ['a<key-1>b<upload-2>c', 'aXbYc', true],
    ['a<key-1>b<upload-2>c', 'abYc', false],
    ['a<key-1>b<upload-2>c', 'aXbbYc', true],
    ['a<key-1>b<upload-2>c', 'aXbYcd', false],
    ['a<b', 'a<b', true],
    ['a<b', 'aXb', false],
  ])('%s fits %s: %s', (recorded, live, fits) => {
    expect(fitsRecorded(recorded, live)).toBe(fits);
  });

  it('takes what the live side put in each placeholder', () => {
    const bound = new Map<string, string>();
    bindPlaceholders(
      { payload: { apiKey: '<key-1>' }, login: 'login <key-2> now' },
      { payload: { apiKey: 'K1' }, login: 'login K2 now' },
      bound,
    );
    expect([...bound]).toEqual([
      ['<key-1>', 'K1'],
      ['<key-2>', 'K2'],
    ]);
  });

  it('answers a recorded string of many placeholders against a long live one without backtracking', () => {
    // As a regular expression of lazy groups, 2,000 characters of it took more than 20 s.
    expect(fitsRecorded(`${'<key-1>'.repeat(40)}!`, 'a'.repeat(200_000))).toBe(false);
  });

  it('leaves out the client-made fields and date-times, and names where the rest differs', () => {
    const ignored = new IgnoredFields(['traceId', 'data.meta.at']);
    const recorded = {
      event: 'add-stream-post',
      requestId: 'r1',
      traceId: 't1',
      data: { streamId: 'a', releaseAt: '2026-01-05T10:00:00.000Z', idempotencyKey: 'k1', meta: { at: 1, n: 2 } },
    };
    const live = {
      event: 'add-stream-post',
      requestId: 'r2',
      traceId: 't2',
      data: { streamId: 'b', releaseAt: '2027-03-01T00:00:00Z', idempotencyKey: 'k2', meta: { at: 5, n: 3 } },
    };
    expect(differences(recorded, live, ignored)).toEqual(['data.streamId', 'data.meta.n']);
  });
});
