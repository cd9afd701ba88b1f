import { formatBodyText } from '../render/body.js';
import { hyperlink } from '../render/hyperlinks.js';
import type { MarkdownRenderer } from '../render/markdown.js';
import { streamColour } from '../render/style.js';
import { momentText } from '../render/text.js';
import type { Entry } from './entry.js';
import { foldLine, lineCells, screenChalk } from './row.js';
import { latencyText } from './latency.js';
import type { Theme } from './theme.js';
import { wrapToWidth } from '../render/wrap.js';

export interface DetailView {
  width: number;
  color: boolean;
  hyperlinks: boolean;
  utc: boolean;
  /** `tree`'s markdown renderer, once loaded; it renders at `width`, the pane's now. */
  markdown: MarkdownRenderer | undefined;
  theme: Theme;
  /** The service's clock minus ours: when a post arrived, on the clock its own times are on. */
  clockOffsetMs: number | undefined;
}

/**
 * A rendered line as rows of the pane. The shared renderer leaves the terminal to fold what
 * it would take too long to wrap (the end of a long text, a very long paragraph); a pane
 * draws rows itself and cuts what is wider, so each is wrapped here, on its own, and a row
 * still wider (a word longer than the pane) is folded.
 */
function fitted(line: string, width: number): string[] {
  if (line.length <= width || lineCells(line) <= width) return [line];
  return wrapToWidth(line, width)
    .split('\n')
    .flatMap((row) => (lineCells(row) <= width ? [row] : foldLine(row, width)));
}

/** When the post (or its release) arrived here, and the feed's latency: the difference, both on the service's clock. */
function arrival(entry: Entry, view: DetailView): string {
  const arrived = entry.arrivedMs + (view.clockOffsetMs ?? 0);
  const latency = arrived - (entry.releaseMs ?? entry.createdMs);
  // History was sent when asked for, not when made: its difference is age, not latency.
  return `arrived ${momentText(arrived, { utc: view.utc })}${entry.history ? '' : `, latency ${latencyText(latency)}`}`;
}

/**
 * The selected post in full, as `tree` renders a text (markdown, tables, links), then its
 * links numbered for `1`–`9`. Lines, so the pane can scroll them.
 */
export function detailLines(entry: Entry, view: DetailView): string[] {
  const c = screenChalk(view.color);
  const header = [
    c.dim(momentText(entry.createdMs, { utc: view.utc })),
    c[view.theme.stream(streamColour(entry.streamId))].bold(entry.streamName),
    entry.source === undefined ? '' : c.italic(entry.source),
    entry.history ? c.dim('(history)') : '',
    entry.releaseMs === undefined ? '' : c.dim(`release ${momentText(entry.releaseMs, { utc: view.utc })}`),
    entry.text === null ? '' : c.dim(arrival(entry, view)),
  ].filter((part) => part !== '');
  const lines = [header.join(' ')];
  if (entry.text === null) {
    lines.push(c.yellow('🔒 hidden until its release'));
    return lines;
  }
  const render = entry.markdown ? view.markdown : undefined;
  const markdown = render === undefined ? undefined : (text: string) => render(text, view.width);
  const textView = {
    color: view.color,
    hyperlinks: view.hyperlinks,
    width: view.width,
    utc: view.utc,
    ...(markdown === undefined ? {} : { markdown }),
  };
  for (const line of formatBodyText(entry.text, entry.markdown, textView, c).split('\n'))
    lines.push(...fitted(line, view.width));
  if (entry.links.length > 0) {
    lines.push('', c.dim('links (o or 1-9 opens, y copies the first):'));
    // Each link was sanitized and checked to be a web address when the post came.
    entry.links.forEach((link, index) => {
      const shown = c[view.theme.link].underline(link);
      lines.push(`${c.bold(String(index + 1))} ${view.hyperlinks ? hyperlink(link, shown) : shown}`);
    });
  }
  return lines;
}
