/** How a figure's value is written, in the runner's tables and in the README's. */

/** A number with thousands separators and at most 3 decimals, then its unit; — when there is none. */
export function formatValue(value, unit) {
  if (value === null || value === undefined) return '—';
  const text = typeof value === 'number' ? value.toLocaleString('en-US', { maximumFractionDigits: 3 }) : String(value);
  return unit ? `${text} ${unit}` : text;
}

/**
 * A figure's cells: name, ours, baseline (with its name), ratio (`ratioDigits` decimals),
 * target, and whether it was met (`missed` is how a miss is written).
 */
export function figureCells(f, { ratioDigits, missed }) {
  return [
    f.figure,
    formatValue(f.value, f.unit),
    f.baseline ? `${formatValue(f.baselineValue, f.unit)} (${f.baseline})` : '—',
    f.ratio === null || f.ratio === undefined ? '—' : f.ratio.toFixed(ratioDigits),
    f.target ?? '—',
    f.met === null || f.met === undefined ? '—' : f.met ? 'yes' : missed,
  ];
}
