import type { MarkdownRenderer } from '../render/markdown.js';
import { streamColour } from '../render/style.js';
import { momentText } from '../render/text.js';
import { detailLines } from './detail.js';
import type { Entry } from './entry.js';
import { KEY_HELP, type KeyState } from './keys.js';
import type { TerminalModel } from './model.js';
import { fitLine, fitText, formatRow, markMatches, padText, screenChalk, type RowView } from './row.js';

export const MIN_COLUMNS = 60;
export const MIN_ROWS = 15;
const MAX_PINNED_ROWS = 3;
const MAX_COLUMNS = 4;
/** Detail panes kept rendered: moving between a few posts and back renders no markdown again. */
const DETAIL_CACHE = 8;

export interface ViewOptions {
  model: TerminalModel;
  /** What the header names as the service. */
  service: string;
  /** `hosted` when the service speaks the hosted dialect only. */
  dialect: () => 'hosted' | 'ours' | undefined;
  color: boolean;
  hyperlinks: boolean;
  utc: boolean;
  /** `tree`'s markdown renderer, once loaded: asking for it loads it. */
  markdown: () => MarkdownRenderer | undefined;
}

type RowLook = Pick<RowView, 'now' | 'alert' | 'pinned' | 'released' | 'search'>;

function connectionText(model: TerminalModel, dialect: string | undefined): string {
  const state = model.connection;
  const dialectText = dialect === undefined ? '' : ` (${dialect === 'hosted' ? 'hosted dialect' : 'serve dialect'})`;
  switch (state.kind) {
    case 'connecting':
      return state.attempt === 0 ? '○ connecting' : `○ connecting (attempt ${state.attempt + 1})`;
    case 'subscribing':
      return '○ subscribing';
    case 'connected':
      return `● connected${dialectText}`;
    case 'reconnecting': {
      const left = Math.max(0, Math.ceil((state.sinceMs + state.delayMs - model.now()) / 1000));
      return `◌ reconnecting (attempt ${state.attempt}, in ${left}s)`;
    }
    case 'closed':
      return `✕ ${state.reason}`;
  }
}

/** Columns a row gives the stream's name at this width. */
const streamColumn = (width: number) => Math.min(18, Math.max(8, Math.floor(width / 7)));

/** What the search line says after the pattern: why it is not a regular expression, and what is kept. */
function searchHint(model: TerminalModel): string {
  if (model.searchError === undefined) return 'Enter keep, Esc clear';
  const kept = model.searching ? `showing /${model.searchPattern}/` : 'showing everything';
  return `✕ ${model.searchError}; ${kept}`;
}

/**
 * The screen as lines, each already cut to the width: the header, pinned rows, the list
 * (or the columns, or an overlay), the detail pane and the footer. It keeps what a frame
 * needs from the last one: where the list is scrolled, and rows and detail panes already
 * formatted, so a key formats the rows it changed and nothing else.
 */
export class View {
  readonly #options: ViewOptions;
  #offset = 0;
  /** The selected post and the line of the list it was drawn on. */
  #anchor: { entry: Entry; line: number } | undefined;
  /** Each post's row as last formatted, with the look it was formatted for. */
  #rows = new WeakMap<Entry, { look: string; line: string }>();
  /** The detail panes last rendered, newest last. */
  readonly #details: { entry: Entry; width: number; markdown: MarkdownRenderer | undefined; lines: string[] }[] = [];

  constructor(options: ViewOptions) {
    this.#options = options;
  }

  /** The whole screen for `keys` at `width` × `height`: exactly `height` lines. */
  lines(keys: KeyState, width: number, height: number): string[] {
    if (width < MIN_COLUMNS || height < MIN_ROWS) {
      const lines = Array.from({ length: height }, () => '');
      lines[0] = fitText(
        `enlarge the terminal: ${MIN_COLUMNS}×${MIN_ROWS} at least, this one is ${width}×${height}`,
        width,
      );
      return lines;
    }
    const { model } = this.#options;
    const now = model.now();
    const pins = model.pinned();
    const pinned = pins.slice(0, MAX_PINNED_ROWS);
    const morePins = pins.length - pinned.length;
    const area = height - 2 - pinned.length - (morePins > 0 ? 1 : 0);
    const streamWidth = streamColumn(width);
    const body =
      keys.overlay !== undefined
        ? this.#overlay(keys, width).slice(0, area)
        : model.columns
          ? this.#columns(width, area, now)
          : this.#list(width, area, streamWidth, now);
    while (body.length < area) body.push('');
    return [
      this.#header(width),
      ...pinned.map((entry) => this.#row(entry, width, streamWidth, false, now)),
      ...(morePins > 0
        ? [screenChalk(this.#options.color).dim(fitText(`  +${morePins} more pinned: P lists them`, width))]
        : []),
      ...body,
      this.#footer(keys, width),
    ];
  }

  #header(width: number): string {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    const streams = model.streams();
    const muted = streams.filter((stream) => model.isMuted(stream.id)).length;
    const shown = model.solo !== undefined ? 1 : streams.length - muted;
    const newAbove = model.newAbove();
    // What changes most and matters most comes first: a narrow window cuts the end.
    const parts = [
      connectionText(model, this.#options.dialect()),
      newAbove > 0 ? c.yellow(`↑ ${newAbove} new`) : '',
      model.paused ? c.yellow(`PAUSED ${model.newSincePause} new`) : '',
      // Counted just after the frame a search key draws from the first rows (`finishRows`).
      model.searching ? c.cyan(`/${model.searchPattern}/ ${model.rowCount() ?? '…'} found`) : '',
      model.filtered && !model.searching ? 'filtered' : '',
      `${model.size} posts${model.mutedByRule > 0 ? ` (${model.mutedByRule} muted by rules)` : ''}`,
      model.pinCount > 0 ? `${model.pinCount} pinned` : '',
      `streams ${shown} shown${muted > 0 ? `, ${muted} muted` : ''}${model.solo !== undefined ? ' (solo)' : ''}`,
      model.clockOffsetMs === undefined
        ? ''
        : `service ${momentText(model.now() + model.clockOffsetMs, { utc: this.#options.utc })}`,
      this.#options.service,
    ].filter((part) => part !== '');
    return fitLine(c.inverse(` ${parts.join(' · ')} `), width);
  }

  #footer(keys: KeyState, width: number): string {
    const { model } = this.#options;
    if (keys.typing) return padText(`/${model.searchText}▏  ${searchHint(model)}`, width);
    if (model.message !== undefined) return padText(model.message, width);
    return padText(
      'j/k move  Enter detail  / search  f streams  space pause  o open  p pin  a alerts  c columns  ? keys  q quit',
      width,
    );
  }

  #overlay(keys: KeyState, width: number): string[] {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    let lines: string[];
    if (keys.overlay === 'help') {
      lines = [c.bold('Keys'), ...KEY_HELP.map(([key, what]) => `  ${padText(key, 14)} ${what}`), '', 'any key closes'];
    } else if (keys.overlay === 'pins') {
      const streamWidth = streamColumn(width);
      lines = [
        c.bold(`Pinned (${model.pinCount} of ${model.maxPins}, the newest pin first): any key closes`),
        ...model.pinned().map((entry) => this.#row(entry, width, streamWidth, false, model.now())),
      ];
    } else if (keys.overlay === 'alerts') {
      lines =
        model.rules.length === 0
          ? [c.bold('Alert rules'), '  none: --alert REGEX, or "alerts" in a profile', '', 'any key closes']
          : [
              c.bold('Alert rules (the first that matches acts)'),
              ...model.rules.map(
                (rule, index) =>
                  `  ${padText(rule.name, 16)} ${padText(rule.action, 9)} ${padText(`${model.alertCounts[index] ?? 0} matched`, 12)} ${rule.field === 'stream' ? 'stream ' : ''}/${fitText(rule.source, Math.max(8, width - 45))}/`,
              ),
              '',
              'any key closes',
            ];
    } else {
      lines = [
        c.bold('Streams: j/k move, m mute/unmute, s solo, Enter close'),
        ...model.streams().map((stream, index) => {
          const state = model.solo === stream.id ? 'solo ' : model.isMuted(stream.id) ? 'muted' : 'shown';
          const line = `${index === keys.pickerIndex ? '›' : ' '} ${state}  ${padText(stream.name, 30)} ${stream.count} posts`;
          return index === keys.pickerIndex ? c.inverse(line) : line;
        }),
      ];
    }
    return lines.map((line) => fitLine(line, width));
  }

  #look(entry: Entry, now: number): RowLook {
    const { model } = this.#options;
    const rule = model.alertOf(entry.id);
    return {
      now: entry.text === null ? Math.floor(now / 1000) * 1000 : undefined,
      alert:
        rule === undefined || rule.action === 'mute' ? undefined : rule.action === 'highlight' ? 'highlight' : 'mark',
      pinned: model.isPinned(entry.id),
      released: model.freshRelease(entry),
      search: model.search,
    };
  }

  /** A post's row, formatted again only when its look changed (selection, pin, width, a ticking countdown). */
  #row(entry: Entry, width: number, streamWidth: number, selected: boolean, now: number): string {
    const look = this.#look(entry, now);
    const key = `${width} ${streamWidth} ${selected} ${look.now} ${look.alert} ${look.pinned} ${look.released} ${look.search?.source}`;
    const cached = this.#rows.get(entry);
    if (cached?.look === key) return cached.line;
    const { color, utc } = this.#options;
    const line = formatRow(entry, { width, color, utc, selected, streamWidth, ...look });
    this.#rows.set(entry, { look: key, line });
    return line;
  }

  #list(width: number, area: number, streamWidth: number, now: number): string[] {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    const listHeight = model.detailOpen ? Math.max(3, Math.floor(area * 0.4)) : area;
    const detailHeight = area - listHeight;
    const selectedIndex = model.selectedIndex();
    const selected = model.firstRows(selectedIndex + 1)[selectedIndex];
    // The selected post stays on its line as posts arrive above it: the list never moves under the reader.
    const anchored = selected !== undefined && this.#anchor?.entry === selected;
    if (anchored) this.#offset = selectedIndex - this.#anchor!.line;
    if (selectedIndex < this.#offset) this.#offset = selectedIndex;
    if (selectedIndex >= this.#offset + listHeight) this.#offset = selectedIndex - listHeight + 1;
    // Only the rows this frame shows: fewer are all there are.
    const rows = model.firstRows(this.#offset + listHeight);
    // A list shorter than the screen starts at the top, unless that would move the selected row.
    if (!anchored) this.#offset = Math.min(this.#offset, Math.max(0, rows.length - listHeight));
    this.#offset = Math.max(0, this.#offset);
    const lines: string[] = [];
    if (rows.length === 0) lines.push(c.dim(model.size === 0 ? '  waiting for posts…' : '  nothing matches'));
    const end = Math.min(rows.length, this.#offset + listHeight);
    for (let index = this.#offset; index < end; index++)
      lines.push(this.#row(rows[index]!, width, streamWidth, index === selectedIndex, now));
    this.#anchor = selected === undefined ? undefined : { entry: selected, line: selectedIndex - this.#offset };
    while (lines.length < listHeight) lines.push('');
    if (!model.detailOpen || detailHeight <= 1) return lines;
    const detail = selected === undefined ? [] : this.#detail(selected, width);
    const scroll = Math.min(model.detailScroll, Math.max(0, detail.length - (detailHeight - 1)));
    lines.push(c.dim('─'.repeat(width)));
    // Marked as drawn: only the lines on screen, and the pane's cache holds one rendering whatever the search.
    for (const line of detail.slice(scroll, scroll + detailHeight - 1))
      lines.push(fitLine(` ${markMatches(line, model.search, this.#options.color)}`, width));
    return lines;
  }

  /** The detail pane's lines for one post at one width: a key renders no markdown again, a resize does. */
  #detail(entry: Entry, width: number): string[] {
    const markdown = this.#options.markdown();
    // Shown as markdown or not at all: the renderer is still loading, and draws it when loaded.
    if (entry.markdown && entry.text !== null && markdown === undefined)
      return [screenChalk(this.#options.color).dim('rendering…')];
    const at = this.#details.findIndex(
      (cached) => cached.entry === entry && cached.width === width && cached.markdown === markdown,
    );
    if (at !== -1) return this.#details[at]!.lines;
    const { color, hyperlinks, utc } = this.#options;
    const lines = detailLines(entry, { width: Math.max(20, width - 2), color, hyperlinks, utc, markdown });
    this.#details.push({ entry, width, markdown, lines });
    if (this.#details.length > DETAIL_CACHE) this.#details.shift();
    return lines;
  }

  #columns(width: number, area: number, now: number): string[] {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    const streams = model
      .streams()
      .filter((stream) => stream.count > 0 && !model.isMuted(stream.id) && (model.solo ?? stream.id) === stream.id)
      .sort((a, b) => b.count - a.count)
      .slice(0, MAX_COLUMNS);
    const columnWidth = Math.floor(width / Math.max(1, streams.length));
    const rows = model.rows();
    // Each column: its stream's name, then its rows, every cell exactly a column wide but its gap.
    const columns = streams.map((stream) => {
      const cellsOf = [c[streamColour(stream.id)].bold(padText(stream.name, columnWidth - 1))];
      for (const entry of rows) {
        if (cellsOf.length >= area) break;
        if (entry.streamId === stream.id) cellsOf.push(this.#row(entry, columnWidth - 1, 0, false, now));
      }
      return cellsOf;
    });
    const blank = ' '.repeat(columnWidth - 1);
    return Array.from({ length: area }, (_, line) =>
      columns
        .map((column) => column[line] ?? blank)
        .join(' ')
        .trimEnd(),
    );
  }
}
