/**
 * A shell command to copy, as lines of at most `width` columns: broken only between words,
 * each line but the last ending in ` \` so the lines paste as one command. A word is never
 * broken (a URL in two would no longer work); one wider than the line stays whole, on a line
 * of its own. Without a width (not a terminal) the command is one line. Columns are counted
 * as characters: the words are a variable, a key, a path and a URL.
 */
export function commandLines(words: readonly string[], indent: string, width: number | undefined): string {
  if (width === undefined) return `${indent}${words.join(' ')}`;
  const continued = `${indent}  `;
  const lines: string[] = [];
  let line = indent;
  for (const [index, word] of words.entries()) {
    const fresh = line === indent || line === continued;
    // Room for the word, and for the ` \` of a line that goes on after it.
    const needed = line.length + 1 + word.length + (index < words.length - 1 ? 2 : 0);
    if (!fresh && needed > width) {
      lines.push(`${line} \\`);
      line = `${continued}${word}`;
    } else line = fresh ? `${line}${word}` : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}
