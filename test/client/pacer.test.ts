import { describe, expect, it } from 'vitest';
import { SendPacer } from '../../src/client/pacer.js';

/** A pacer on a clock the test moves; backoff jitter fixed at its longest. */
function pacerAt(): { pacer: SendPacer; advance(ms: number): void } {
  let now = 1_000;
  const pacer = new SendPacer(
    () => now,
    () => 1,
  );
  pacer.connectionOpened();
  return {
    pacer,
    advance: (ms) => {
      now += ms;
    },
  };
}

/** Sends while the pacer allows at once; how many went. */
function sendAllowed(pacer: SendPacer, unanswered = 0): number {
  let sent = 0;
  while (pacer.delay(unanswered + sent) === 0 && sent < 10_000) {
    pacer.sent();
    sent += 1;
  }
  return sent;
}

describe('SendPacer', () => {
  it('with a stated limit: most of the burst at once, then one command per 1/rate', () => {
    const { pacer, advance } = pacerAt();
    pacer.state({ perSecond: 200, burst: 400 });
    expect(sendAllowed(pacer)).toBe(320);
    expect(pacer.delay(0)).toBeCloseTo(5, 5);
    advance(50);
    expect(sendAllowed(pacer)).toBe(10);
  });

  it('counts what went before `connected` stated the limit against the burst', () => {
    const { pacer } = pacerAt();
    for (let i = 0; i < 100; i++) pacer.sent();
    pacer.state({ perSecond: 200, burst: 400 });
    expect(sendAllowed(pacer)).toBe(220);
  });

  it('without a stated limit: no pacing until rate-limited, then one at a time after a backoff, growing back by one per answer', () => {
    const { pacer, advance } = pacerAt();
    expect(sendAllowed(pacer)).toBe(10_000);
    pacer.refused();
    // The other refusals of the same window do not lengthen the hold.
    pacer.refused();
    pacer.refused();
    expect(pacer.delay(0)).toBe(250);
    advance(250);
    expect(pacer.delay(0)).toBe(0);
    expect(pacer.delay(1)).toBe(Number.POSITIVE_INFINITY);
    pacer.answered();
    expect(pacer.delay(1)).toBe(0);
    expect(pacer.delay(2)).toBe(Number.POSITIVE_INFINITY);
    pacer.answered();
    expect(pacer.delay(2)).toBe(0);
    expect(pacer.refusals).toBe(3);
  });

  it('a refusal after the hold waits longer; an answer starts the backoff over', () => {
    const { pacer, advance } = pacerAt();
    pacer.refused();
    advance(250);
    pacer.refused();
    expect(pacer.delay(0)).toBe(500);
    advance(500);
    pacer.answered();
    pacer.refused();
    expect(pacer.delay(0)).toBe(250);
  });

  it('a new connection starts with a full bucket', () => {
    const { pacer } = pacerAt();
    pacer.state({ perSecond: 10, burst: 20 });
    expect(sendAllowed(pacer)).toBe(16);
    pacer.connectionOpened();
    expect(sendAllowed(pacer)).toBe(16);
  });
});
