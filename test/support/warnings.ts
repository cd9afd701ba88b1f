/**
 * Collects the process warnings of one name while a test runs: Node reports some misuse
 * (a timer past 2^31−1 ms: `TimeoutOverflowWarning`) only as a warning, and carries on.
 */
export function watchWarnings(name: string): { seen: string[]; stop: () => void } {
  const seen: string[] = [];
  const listener = (warning: Error) => {
    if (warning.name === name) seen.push(warning.message);
  };
  process.on('warning', listener);
  return { seen, stop: () => process.off('warning', listener) };
}
