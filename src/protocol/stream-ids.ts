/** Splits "a, b,,c" into ["a","b","c"]; an array is trimmed the same way. */
export function splitStreamIds(value: string | readonly string[]): string[] {
  const parts = typeof value === 'string' ? value.split(',') : value;
  return [...new Set(parts.map((part) => part.trim()).filter((part) => part !== ''))];
}
