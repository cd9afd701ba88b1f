import type { MarkdownRenderer } from '../render/markdown.js';
import { streamColour } from '../render/style.js';
import { momentText } from '../render/text.js';
import { detailLines } from './detail.js';
import type { Entry } from './entry.js';
import { FOOTERS, KEY_HELP, MODE_HINTS } from './bindings.js';
import type { KeyState, Placement, TerminalModel } from './model.js';
import { ageText, latencyText } from './latency.js';
import { highlightMarks, type Theme } from './theme.js';
import { cells, fitLine, fitText, formatRow, markMatches, padText, screenChalk, type RowView } from './row.js';

export const MIN_COLUMNS = 60;
export const MIN_ROWS = 15;
/** Below this width the header and the footer say things in fewer words. */
const NARROW_COLUMNS = 100;
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
  /** The median latency of the last live posts, in ms (see Latencies). */
  latency: () => number | undefined;
  color: boolean;
  hyperlinks: boolean;
  utc: boolean;
  /** `tree`'s markdown renderer, once loaded: asking for it loads it. */
  markdown: () => MarkdownRenderer | undefined;
  theme: Theme;
}

/** Whether the window is below the smallest usable size: the screen says so, and keys wait. */
export function tooSmall(width: number, height: number): boolean {
  return width < MIN_COLUMNS || height < MIN_ROWS;
}

/** Words wrapped to `width`, or undefined when a word is wider. */
function wordWrap(text: string, width: number): string[] | undefined {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    if (cells(word) > width) return undefined;
    const last = lines[lines.length - 1];
    if (last !== undefined && cells(last) + 1 + cells(word) <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/**
 * The too-small screen: the sizes whole, in as many words as fit, wrapped over the rows there
 * are, then how many keys were ignored.
 */
function tooSmallLines(width: number, height: number, keysIgnored: number): string[] {
  const want = `${MIN_COLUMNS}×${MIN_ROWS}`;
  const have = `${width}×${height}`;
  const texts = [
    `enlarge the terminal: ${want} at least, this one is ${have}`,
    `enlarge: ${want} at least, now ${have}`,
    `need ${want}, now ${have}`,
    `${want} > ${have}`,
  ];
  let shown: string[] | undefined;
  for (const text of texts) {
    shown = wordWrap(text, width);
    if (shown !== undefined && shown.length <= height) break;
  }
  // Narrower than a size: cut only then.
  const lines = (shown ?? [texts[texts.length - 1]!]).slice(0, height).map((line) => fitText(line, width));
  if (keysIgnored > 0 && lines.length < height) lines.push(fitText(`${keysIgnored} keys ignored`, width));
  while (lines.length < height) lines.push('');
  return lines;
}

/** Black on yellow: readable on a dark and on a light background alike. */
const warningStyle = (c: ReturnType<typeof screenChalk>) => c.bgYellow.black.bold;

/** Where a formatted row's age goes: as wide as the longest (`59s`), and in no text (the sanitizer takes controls out). */
const AGE_SLOT = '\u0001\u0001\u0001';

type RowLook = Pick<RowView, 'now' | 'alert' | 'highlight' | 'pinned' | 'released' | 'search' | 'age'>;

/**
 * The connection as the header says it; `warning` when the feed is not coming. `narrow`: in
 * fewer words, so the clock still fits beside it.
 */
function connectionState(
  model: TerminalModel,
  dialect: string | undefined,
  narrow: boolean,
): { text: string; warning: boolean } {
  const state = model.connection;
  switch (state.kind) {
    case 'connecting':
      return state.attempt === 0
        ? { text: '○ connecting', warning: false }
        : { text: `○ connecting (attempt ${state.attempt + 1})`, warning: true };
    case 'subscribing':
      return { text: '○ subscribing', warning: false };
    case 'connected': {
      const dialectText =
        dialect === undefined || narrow ? '' : ` (${dialect === 'hosted' ? 'hosted dialect' : 'serve dialect'})`;
      return { text: `● connected${dialectText}`, warning: false };
    }
    case 'reconnecting': {
      const left = Math.max(0, Math.ceil((state.sinceMs + state.delayMs - model.now()) / 1000));
      const text = narrow
        ? `◌ reconnecting (attempt ${state.attempt}, in ${left}s)`
        : `◌ reconnecting (attempt ${state.attempt}, next in ${left}s, r now)`;
      return { text, warning: true };
    }
    case 'closed':
      return { text: `✕ ${state.reason}`, warning: true };
  }
}

/** Columns a row gives the stream's name at this width. */
const streamColumn = (width: number) => Math.min(18, Math.max(8, Math.floor(width / 7)));

/** What the search line says after the pattern: why it is not a regular expression, and what is kept. */
function searchHint(model: TerminalModel): string {
  if (model.searchError === undefined) return MODE_HINTS.search;
  const kept = model.searching ? `showing /${model.searchPattern}/` : 'showing everything';
  return `✕ ${model.searchError}; ${kept}`;
}

/**
 * The screen as lines, each already cut to the width: the header, pinned rows, the list
 * (or the columns, or an overlay), the detail pane and the footer. It keeps what a frame
 * needs from the last one: where the list is scrolled, and rows and detail panes already
 * formatted, so a key formats the rows it changed and nothing else.
 */
/** A frame's lines, and where it put the list and the detail pane. */
export interface Frame {
  lines: string[];
  placed: Placement;
}

export class View {
  readonly #options: ViewOptions;
  /** Keys pressed while the window was too small: none acted, and the screen says how many. */
  keysIgnored = 0;
  /** Each post's row as last formatted, with the look it was formatted for. */
  #rows = new WeakMap<Entry, { look: string; line: string }>();
  /** The detail panes last rendered, newest last. */
  readonly #details: { entry: Entry; width: number; markdown: MarkdownRenderer | undefined; lines: string[] }[] = [];

  constructor(options: ViewOptions) {
    this.#options = options;
  }

  /**
   * The whole screen at `width` × `height` (exactly `height` lines), and where it put the list
   * and the detail pane: the view writes nothing; that goes back through `update` (`drawn`).
   */
  frame(width: number, height: number): Frame {
    const { model } = this.#options;
    const kept = { list: model.list, detailScroll: model.detailScroll };
    if (tooSmall(width, height)) return { lines: tooSmallLines(width, height, this.keysIgnored), placed: kept };
    this.keysIgnored = 0;
    const keys = model.keys;
    const pins = model.pinned();
    const pinned = pins.slice(0, MAX_PINNED_ROWS);
    const morePins = pins.length - pinned.length;
    const area = height - 2 - pinned.length - (morePins > 0 ? 1 : 0);
    const streamWidth = streamColumn(width);
    const list =
      keys.overlay !== undefined
        ? { lines: this.#overlay(keys, width).slice(0, area), placed: kept }
        : model.columns
          ? { lines: this.#columns(width, area), placed: kept }
          : this.#list(width, area, streamWidth);
    const body = list.lines;
    while (body.length < area) body.push('');
    return {
      lines: [
        this.#header(width),
        ...pinned.map((entry) => this.#row(entry, width, streamWidth, false)),
        ...(morePins > 0
          ? [screenChalk(this.#options.color).dim(fitText(`  +${morePins} more pinned: P lists them`, width))]
          : []),
        ...body,
        this.#footer(keys, width),
      ],
      placed: list.placed,
    };
  }

  #header(width: number): string {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    const streams = model.streams();
    const muted = streams.filter((stream) => model.isMuted(stream.id)).length;
    const shown = model.solo !== undefined ? 1 : streams.length - muted;
    const narrow = width < NARROW_COLUMNS;
    const latency = this.#options.latency();
    const connection = connectionState(model, this.#options.dialect(), narrow);
    const newAbove = model.newAbove();
    // What matters most comes first: a narrow window cuts the end, never the state or the clock.
    // A part with a style of its own stands apart from the header's inverse, in colours that read on any background.
    const parts: [text: string, style?: (text: string) => string][] = [
      [
        model.clockOffsetMs === undefined
          ? ''
          : `${narrow ? '' : 'service '}${momentText(model.now() + model.clockOffsetMs, { utc: this.#options.utc })}`,
      ],
      [latency === undefined ? '' : `latency ${latencyText(latency)}`],
      [newAbove > 0 ? `↑ ${newAbove} new` : '', warningStyle(c)],
      [model.paused ? `PAUSED ${model.newSincePause} new` : '', warningStyle(c)],
      // Counted just after the frame a search key draws from the first rows (`finishRows`).
      [model.searching ? `/${model.searchPattern}/ ${model.rowCount() ?? '…'} found` : '', c.bgCyan.black],
      [model.coin === undefined ? '' : `coin $${model.coin} (t clears)`, c.bgCyan.black],
      [model.filtered && !model.searching && model.coin === undefined ? 'filtered' : ''],
      [`${model.size} posts${model.mutedByRule > 0 ? ` (${model.mutedByRule} muted by rules)` : ''}`],
      [model.pinCount > 0 ? `${model.pinCount} pinned` : ''],
      [`streams ${shown} shown${muted > 0 ? `, ${muted} muted` : ''}${model.solo !== undefined ? ' (solo)' : ''}`],
      [this.#options.service],
    ];
    const state = ` ${connection.text} `;
    const rest = parts
      .filter(([text]) => text !== '')
      .map(([text, style]) =>
        style === undefined ? c.inverse(`· ${text} `) : `${c.inverse('· ')}${style(text)}${c.inverse(' ')}`,
      )
      .join('');
    // A dropped feed is never taken for a live one.
    return fitLine(`${connection.warning ? warningStyle(c)(state) : c.inverse(state)}${rest}`, width);
  }

  #footer(keys: KeyState, width: number): string {
    const { model } = this.#options;
    if (keys.typing) return padText(`/${model.searchText}▏  ${searchHint(model)}`, width);
    if (keys.rule !== undefined)
      return padText(
        `new rule: ${keys.rule.text}▏  ${keys.rule.error === undefined ? MODE_HINTS.rule : `✕ ${keys.rule.error}`}`,
        width,
      );
    if (model.message !== undefined) return padText(model.message, width);
    // The most keys that fit, in as many words: never a cut word.
    return padText(FOOTERS.find((footer) => cells(footer) <= width) ?? FOOTERS[FOOTERS.length - 1]!, width);
  }

  #overlay(keys: KeyState, width: number): string[] {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    let lines: string[];
    if (keys.overlay === 'help') {
      lines = [c.bold('Keys'), ...KEY_HELP.map(([key, what]) => `  ${padText(key, 14)} ${what}`), '', MODE_HINTS.help];
    } else if (keys.overlay === 'pins') {
      const streamWidth = streamColumn(width);
      lines = [
        c.bold(`Pinned (${model.pinCount} of ${model.maxPins}, the newest pin first): ${MODE_HINTS.pins}`),
        ...model.pinned().map((entry) => this.#row(entry, width, streamWidth, false)),
      ];
    } else if (keys.overlay === 'alerts') {
      lines = [
        c.bold(`Alert rules (the first that matches acts): ${MODE_HINTS.alerts}`),
        ...model.rules.map((rule, index) => {
          const line = `${index === keys.ruleIndex ? '›' : ' '} ${padText(rule.name, 16)} ${padText(rule.action, 9)} ${padText(rule.color ?? '', 8)} ${padText(`${model.alertCount(rule)} matched`, 12)} ${rule.field === 'stream' ? 'stream ' : ''}/${fitText(rule.source, Math.max(8, width - 54))}/`;
          return index === keys.ruleIndex ? c.inverse(line) : line;
        }),
        ...(model.rules.length === 0 ? ['  none yet: + adds one, or --alert REGEX, or "alerts" in a profile'] : []),
      ];
    } else {
      lines = [
        c.bold(`Streams: ${MODE_HINTS.picker}`),
        ...model.streams().map((stream, index) => {
          const state = model.solo === stream.id ? 'solo ' : model.isMuted(stream.id) ? 'muted' : 'shown';
          const line = `${index === keys.pickerIndex ? '›' : ' '} ${state}  ${padText(stream.name, 30)} ${stream.count} posts`;
          return index === keys.pickerIndex ? c.inverse(line) : line;
        }),
        ...model.mutedSources().map((source, at) => {
          const index = model.streams().length + at;
          const line = `${index === keys.pickerIndex ? '›' : ' '} muted  source ${source}`;
          return index === keys.pickerIndex ? c.inverse(line) : line;
        }),
      ];
    }
    return lines.map((line) => fitLine(line, width));
  }

  #look(entry: Entry): RowLook {
    const { model } = this.#options;
    const rule = model.alertOf(entry.id);
    // On the service's clock, as the post's own time is: a machine's clock off by a minute shows no false age.
    const since = entry.releaseMs ?? entry.createdMs;
    return {
      now: entry.text === null ? Math.floor(model.agesAt / 1000) * 1000 : undefined,
      // At the last tick (`agesAt`): a post newer than it is 0s old until the next.
      age: entry.text === null ? undefined : ageText(model.agesAt + (model.clockOffsetMs ?? 0) - since),
      alert:
        rule === undefined || rule.action === 'mute' ? undefined : rule.action === 'highlight' ? 'highlight' : 'mark',
      highlight: rule?.color === undefined ? undefined : rule,
      pinned: model.isPinned(entry.id),
      released: model.freshRelease(entry),
      search: model.search,
    };
  }

  /** A post's row, formatted again only when its look changed (selection, pin, width, a ticking countdown). */
  #row(entry: Entry, width: number, streamWidth: number, selected: boolean): string {
    const look = this.#look(entry);
    const colour = look.highlight === undefined ? '' : `${look.highlight.color}/${look.highlight.pattern.source}`;
    const key = `${width} ${streamWidth} ${selected} ${look.now} ${look.alert} ${colour} ${look.pinned} ${look.released} ${look.search?.source}`;
    let cached = this.#rows.get(entry);
    if (cached?.look !== key) {
      const { color, utc, theme } = this.#options;
      // Formatted with a slot for the age: the age changes every second, the rest seldom.
      const line = formatRow(entry, { width, color, utc, selected, streamWidth, theme, ...look, age: AGE_SLOT });
      cached = { look: key, line };
      this.#rows.set(entry, cached);
    }
    return cached.line.replace(AGE_SLOT, (look.age ?? '').padStart(AGE_SLOT.length));
  }

  #list(width: number, area: number, streamWidth: number): Frame {
    const { model } = this.#options;
    const c = screenChalk(this.#options.color);
    const listHeight = model.detailOpen ? Math.max(3, Math.floor(area * 0.4)) : area;
    const detailHeight = area - listHeight;
    const selectedIndex = model.selectedIndex();
    const selected = model.firstRows(selectedIndex + 1)[selectedIndex];
    const last = model.list;
    let offset = last.offset;
    // The selected post stays on its line as posts arrive above it: the list never moves under the reader.
    const anchored = selected !== undefined && last.anchor?.entry === selected;
    if (anchored) offset = selectedIndex - last.anchor!.line;
    if (selectedIndex < offset) offset = selectedIndex;
    if (selectedIndex >= offset + listHeight) offset = selectedIndex - listHeight + 1;
    // Only the rows this frame shows: fewer are all there are.
    const rows = model.firstRows(offset + listHeight);
    // A list shorter than the screen starts at the top, unless that would move the selected row.
    if (!anchored) offset = Math.min(offset, Math.max(0, rows.length - listHeight));
    offset = Math.max(0, offset);
    const lines: string[] = [];
    if (rows.length === 0) lines.push(c.dim(model.size === 0 ? '  waiting for posts…' : '  nothing matches'));
    const end = Math.min(rows.length, offset + listHeight);
    for (let index = offset; index < end; index++)
      lines.push(this.#row(rows[index]!, width, streamWidth, index === selectedIndex));
    const list = {
      offset,
      anchor: selected === undefined ? undefined : { entry: selected, line: selectedIndex - offset },
    };
    while (lines.length < listHeight) lines.push('');
    if (!model.detailOpen || detailHeight <= 1) return { lines, placed: { list, detailScroll: model.detailScroll } };
    const detail = selected === undefined ? [] : this.#detail(selected, width);
    // Only here is the pane's length known: a scroll past its end is taken back, so `K` moves at once.
    const scroll = Math.min(model.detailScroll, Math.max(0, detail.length - (detailHeight - 1)));
    lines.push(c.dim('─'.repeat(width)));
    // Marked as drawn: only the lines on screen, and the pane's cache holds one rendering whatever the search.
    const rule = selected === undefined ? undefined : model.alertOf(selected.id);
    const marks = rule?.color === undefined || rule.field !== 'text' ? undefined : highlightMarks(c, rule.color);
    for (const [at, line] of detail.slice(scroll, scroll + detailHeight - 1).entries()) {
      // The first line says when and where, not what: the rule's matches are the text's.
      const highlighted =
        marks === undefined || scroll + at === 0 ? line : markMatches(line, rule!.pattern, this.#options.color, marks);
      lines.push(fitLine(` ${markMatches(highlighted, model.search, this.#options.color)}`, width));
    }
    return { lines, placed: { list, detailScroll: scroll } };
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
    const { color, hyperlinks, utc, theme } = this.#options;
    const lines = detailLines(entry, {
      width: Math.max(20, width - 2),
      color,
      hyperlinks,
      utc,
      markdown,
      theme,
      clockOffsetMs: this.#options.model.clockOffsetMs,
    });
    this.#details.push({ entry, width, markdown, lines });
    if (this.#details.length > DETAIL_CACHE) this.#details.shift();
    return lines;
  }

  #columns(width: number, area: number): string[] {
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
      const colour = this.#options.theme.stream(streamColour(stream.id));
      const cellsOf = [c[colour].bold(padText(stream.name, columnWidth - 1))];
      for (const entry of rows) {
        if (cellsOf.length >= area) break;
        if (entry.streamId === stream.id) cellsOf.push(this.#row(entry, columnWidth - 1, 0, false));
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
