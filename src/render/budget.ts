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
