const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * Time spent on one render, measured against a limit. CPU time, not wall time:
 * on a machine whose CPU is shared, a render descheduled for 30 ms has done no
 * more work, and the same text must render the same way. CPU time is a system call; it cannot pass the
 * wall clock, so it is read only once the wall clock says the budget may be spent.
 */
export function budgetClock(now: (() => number) | undefined): { start(): void; over(limitMs: number): boolean } {
  if (now !== undefined) {
    let from = 0;
    return { start: () => void (from = now()), over: (limitMs) => now() - from > limitMs };
  }
  let wallFrom = 0;
  let cpuFrom = 0;
  return {
    start: () => {
      wallFrom = performance.now();
      cpuFrom = cpuMs();
    },
    over: (limitMs) => performance.now() - wallFrom > limitMs && cpuMs() - cpuFrom > limitMs,
  };
}

/** Thrown from inside marked when the text has used up its budget. */
export class OverBudget extends Error {}

/**
 * A budget for marked's work on one text at a time. marked cannot be interrupted from
 * outside; it calls extension tokenizers at every block and inline step, so `extensions`
 * read the clock there, and renderers call `check` before work that cannot be interrupted.
 * `measure` runs one text's work against the budget; past it, OverBudget is thrown.
 */
export function markedBudget(limitMs: number, now: (() => number) | undefined) {
  const spent = budgetClock(now);
  let measuring = false;
  const check = (): undefined => {
    if (measuring && spent.over(limitMs)) throw new OverBudget();
    return undefined;
  };
  return {
    check,
    extensions: [
      { name: 'budgetBlock', level: 'block' as const, tokenizer: check },
      { name: 'budgetInline', level: 'inline' as const, tokenizer: check },
    ],
    measure<T>(work: () => T): T {
      spent.start();
      measuring = true;
      try {
        return work();
      } finally {
        measuring = false;
      }
    },
  };
}
