import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReplyWaits, type ReplyWait } from '../../src/client/reply-waits.js';

// The clock the waits read is the fake timers' own, so a deadline and its timer agree,
// except where a test moves it apart on purpose.
let skew = 0;
const now = () => Date.now() + skew;

describe('ReplyWaits: the replies a connection awaits, on one timer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    skew = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function waits(timeoutMs: number, again: (wait: ReplyWait<string>) => boolean = () => false) {
    const due: string[] = [];
    const queue: ReplyWaits<string> = new ReplyWaits<string>(
      timeoutMs,
      (wait) => {
        due.push(`${wait.what}@${wait.context}`);
        return again(wait);
      },
      now,
    );
    return { queue, due };
  }

  it('a reply that does not come runs out after the timeout, once', () => {
    const { queue, due } = waits(1000);
    queue.add('ack 1', 's1');
    vi.advanceTimersByTime(999);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(due).toEqual(['ack 1@s1']);
    vi.advanceTimersByTime(10_000);
    expect(due).toEqual(['ack 1@s1']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a thousand waits use one timer, and none once all are answered', () => {
    const { queue, due } = waits(1000);
    const settles = Array.from({ length: 1000 }, (_, i) => queue.add(`ack ${i}`, 's1'));
    expect(vi.getTimerCount()).toBe(1);
    expect(queue.size).toBe(1000);
    // Answered out of order, as replies to pipelined commands may be.
    for (let i = 999; i >= 0; i -= 2) expect(settles[i]!()).toBe(true);
    for (let i = 0; i < 1000; i += 2) expect(settles[i]!()).toBe(true);
    expect(settles[0]!()).toBe(false);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(due).toEqual([]);
  });

  it('each wait runs out at its own deadline, not its elder’s', () => {
    const { queue, due } = waits(1000);
    const first = queue.add('ack 1', 's1');
    vi.advanceTimersByTime(600);
    queue.add('ack 2', 's1');
    first();
    vi.advanceTimersByTime(399);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(600);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(due).toEqual(['ack 2@s1']);
  });

  it('a wait started again (its owner was not reading) runs out a full timeout later', () => {
    let pausedOnce = true;
    const { queue, due } = waits(1000, () => {
      const again = pausedOnce;
      pausedOnce = false;
      return again;
    });
    queue.add('ack 1', 's1');
    vi.advanceTimersByTime(1000);
    expect(due).toEqual(['ack 1@s1']);
    vi.advanceTimersByTime(999);
    expect(due).toEqual(['ack 1@s1']);
    vi.advanceTimersByTime(1);
    expect(due).toEqual(['ack 1@s1', 'ack 1@s1']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a timer that fires before the clock reads the deadline waits the rest', () => {
    const { queue, due } = waits(1000);
    queue.add('ack 1', 's1');
    skew = -1;
    vi.advanceTimersByTime(1000);
    expect(due).toEqual([]);
    skew = 0;
    vi.advanceTimersByTime(1);
    expect(due).toEqual(['ack 1@s1']);
  });

  it('a wait longer than a timer can hold runs out at its time, not at once', () => {
    const { queue, due } = waits(3 * 2 ** 31);
    queue.add('ack 1', 's1');
    vi.advanceTimersByTime(2 ** 31);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(2 * 2 ** 31);
    expect(due).toEqual(['ack 1@s1']);
  });

  it('an owner that clears every wait when one runs out hears of that one only', () => {
    const holder: { queue?: ReplyWaits<string> } = {};
    const due: string[] = [];
    const queue = new ReplyWaits<string>(
      1000,
      (wait) => {
        due.push(wait.what);
        holder.queue!.clear();
        return false;
      },
      now,
    );
    holder.queue = queue;
    queue.add('ack 1', 's1');
    queue.add('ack 2', 's1');
    vi.advanceTimersByTime(5000);
    expect(due).toEqual(['ack 1']);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    // Waits added after a clear run out as usual.
    queue.add('ack 3', 's2');
    vi.advanceTimersByTime(1000);
    expect(due).toEqual(['ack 1', 'ack 3']);
  });
});
