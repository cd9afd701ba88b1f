/**
 * A value at once, or a promise of it. What the memory store has at hand it answers in the
 * same turn: a connection's accept and subscribe then run without a trip through the
 * microtask queue (accept CPU is a benchmarked figure); a shared store answers with promises.
 */
export type Awaitable<T> = T | Promise<T>;

/** Whether a store's answer is still on its way. */
export function isPending<T>(value: Awaitable<T>): value is Promise<T> {
  return value instanceof Promise;
}
