/** Just enough of Markdown to check a page's links: its headings' anchors and its relative links. */

/** The page's lines outside fenced code blocks (a `# comment` in a shell block is no heading), numbered from 1. */
function proseLines(text: string): { number: number; line: string }[] {
  const lines: { number: number; line: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const marker = /^\s*(```|~~~)/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || fence === marker)) {
      fence = fence === undefined ? marker : undefined;
    } else if (fence === undefined) {
      lines.push({ number: index + 1, line });
    }
  });
  return lines;
}

/**
 * GitHub's anchor for a heading: lowercase, punctuation dropped (`-` and `_` kept), each
 * space a `-`; a repeated heading gets `-1`, `-2`, … as GitHub numbers them.
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const { line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

export interface Link {
  line: number;
  target: string;
}

/** Every link and image target in the prose, with its line number; code spans are not links. */
export function links(text: string): Link[] {
  return proseLines(text).flatMap(({ number, line }) =>
    [...line.replace(/`[^`]*`/g, 'code').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => ({
      line: number,
      target: match[1]!,
    })),
  );
}
