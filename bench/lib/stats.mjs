/** Small statistics helpers shared by the benchmarks. */

/** Nearest-rank percentile (0-100) of an ascending-sorted array or typed array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

/** Median of a list of numbers (the middle run of an odd count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Median of `key` over a list of runs (objects); null when any run has null there. */
export function medianOf(runs, key) {
  return runs.some((run) => run[key] === null) ? null : median(runs.map((run) => run[key]));
}

/** Sum of `key` over a list of objects. */
export function sumOf(items, key) {
  return items.reduce((sum, item) => sum + item[key], 0);
}

/** Concatenates typed arrays into one ascending-sorted Float64Array. */
export function sortedConcat(arrays) {
  const total = arrays.reduce((sum, array) => sum + array.length, 0);
  const all = new Float64Array(total);
  let offset = 0;
  for (const array of arrays) {
    all.set(array, offset);
    offset += array.length;
  }
  return all.sort();
}

/** Rounds to a number of significant digits, for figures meant to be read. */
export function round(value, digits = 3) {
  if (!Number.isFinite(value) || value === 0) return value;
  const scale = 10 ** (digits - 1 - Math.floor(Math.log10(Math.abs(value))));
  return Math.round(value * scale) / scale;
}

/** A figure row for bench/run.mjs: ours next to a baseline from the same run, with their ratio. */
export function comparison(baseline, name, unit, ours, baselineValue, extra = {}) {
  return {
    figure: name,
    value: ours,
    unit,
    baseline,
    baselineValue,
    ratio:
      ours === null ||
      ours === undefined ||
      baselineValue === null ||
      baselineValue === undefined ||
      baselineValue === 0
        ? null
        : round(ours / baselineValue, 3),
    target: null,
    met: null,
    ...extra,
  };
}
