import { describe, expect, it } from 'vitest';
import { RespawnBackoff } from '../../src/cli/serve-workers.js';

describe('RespawnBackoff', () => {
  it('replaces at once after a worker that ran a while, and backs off while replacements die young', () => {
    const backoff = new RespawnBackoff();
    const young = RespawnBackoff.youngMs - 1;
    expect([young, young, young, young].map((lived) => backoff.delayAfter(lived))).toEqual([0, 250, 500, 1000]);
    for (let i = 0; i < 10; i += 1) backoff.delayAfter(young);
    expect(backoff.delayAfter(young)).toBe(RespawnBackoff.maxMs);
    // A worker that lived past the threshold resets the count.
    expect(backoff.delayAfter(RespawnBackoff.youngMs)).toBe(0);
    expect(backoff.delayAfter(young)).toBe(0);
    expect(backoff.delayAfter(young)).toBe(250);
  });
});
