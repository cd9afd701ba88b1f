/** Splits "a, b,,c" into ["a","b","c"]; an array is trimmed the same way. */
export function splitStreamIds(value: string | readonly string[]): string[] {
  // One id, as nearly every subscription names: no list to split, no duplicates to drop.
  if (typeof value === 'string' && !value.includes(',')) {
    const id = value.trim();
    return id === '' ? [] : [id];
  }
  const parts = typeof value === 'string' ? value.split(',') : value;
  return [...new Set(parts.map((part) => part.trim()).filter((part) => part !== ''))];
}
