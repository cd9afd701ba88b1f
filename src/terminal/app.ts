import { Box, Text, useInput, useStdout } from 'ink';
import { createElement as h, memo, useEffect, useRef, useState, useSyncExternalStore, type ReactElement } from 'react';
import type { MarkdownRenderer } from '../render/markdown.js';
import { streamColour } from '../render/style.js';
import { momentText } from '../render/text.js';
import { detailLines, type DetailView } from './detail.js';
import type { Entry } from './entry.js';
import { handleKey, initialKeyState, KEY_HELP, splitKeys, type KeyEffect, type KeyState } from './keys.js';
import type { TerminalModel } from './model.js';
import { fitText, formatRow, padText, RELEASE_MARK_MS, screenChalk, type RowView } from './row.js';
import type { FrameStore } from './store.js';

export const MIN_COLUMNS = 60;
export const MIN_ROWS = 15;
const MAX_PINNED_ROWS = 3;
const MAX_COLUMNS = 4;

export interface AppProps {
  model: TerminalModel;
  store: FrameStore;
  /** What the header names as the service. */
  service: string;
  /** `hosted` when the service speaks the hosted dialect only. */
  dialect: () => 'hosted' | 'ours' | undefined;
  color: boolean;
  hyperlinks: boolean;
  utc: boolean;
  markdown: () => MarkdownRenderer | undefined;
  onEffect: (effect: NonNullable<KeyEffect>) => void;
}

type RowProps = Omit<RowView, 'width'> & { entry: Entry; width: number };

// Rows are memoised by post and look: a key that moves the cursor redraws two rows, not the page.
const Row = memo(function Row(props: RowProps): ReactElement {
  return h(Text, { wrap: 'truncate-end' }, formatRow(props.entry, props));
});

function useSize(): { columns: number; rows: number } {
  const { stdout } = useStdout();
  const read = () => ({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const resized = () => setSize({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
    stdout.on('resize', resized);
    return () => void stdout.off('resize', resized);
  }, [stdout]);
  return size;
}

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

function headerLine(props: AppProps): string {
  const { model } = props;
  const c = screenChalk(props.color);
  const streams = model.streams();
  const muted = streams.filter((stream) => model.isMuted(stream.id)).length;
  const shown = model.solo !== undefined ? 1 : streams.length - muted;
  // What changes most and matters most comes first: a narrow window cuts the end.
  const parts = [
    connectionText(model, props.dialect()),
    model.paused ? c.yellow(`PAUSED ${model.newSincePause} new`) : '',
    model.searching ? c.cyan(`/${model.searchText}/ ${model.rows().length} found`) : '',
    model.filtered && !model.searching ? 'filtered' : '',
    `${model.size} posts${model.mutedByRule > 0 ? ` (${model.mutedByRule} muted by rules)` : ''}`,
    `streams ${shown} shown${muted > 0 ? `, ${muted} muted` : ''}${model.solo !== undefined ? ' (solo)' : ''}`,
    model.clockOffsetMs === undefined
      ? ''
      : `service ${momentText(model.now() + model.clockOffsetMs, { utc: props.utc })}`,
    props.service,
  ].filter((part) => part !== '');
  // Ink cuts the line to the width, measuring wide characters as two.
  return c.inverse(` ${parts.join(' · ')} `);
}

function footerLine(props: AppProps, keys: KeyState, width: number): string {
  const { model } = props;
  if (keys.typing) return padText(`/${model.searchText}▏  Enter keep, Esc clear`, width);
  if (model.message !== undefined) return padText(model.message, width);
  return padText(
    'j/k move  Enter detail  / search  f streams  space pause  o open  p pin  a alerts  c columns  ? keys  q quit',
    width,
  );
}

function overlayLines(props: AppProps, keys: KeyState, width: number): string[] {
  const { model } = props;
  const c = screenChalk(props.color);
  if (keys.overlay === 'help') {
    return [c.bold('Keys'), ...KEY_HELP.map(([key, what]) => `  ${padText(key, 14)} ${what}`), '', 'any key closes'];
  }
  if (keys.overlay === 'alerts') {
    if (model.rules.length === 0)
      return [c.bold('Alert rules'), '  none: --alert REGEX, or "alerts" in a profile', '', 'any key closes'];
    return [
      c.bold('Alert rules (the first that matches acts)'),
      ...model.rules.map(
        (rule, index) =>
          `  ${padText(rule.name, 16)} ${padText(rule.action, 9)} ${padText(`${model.alertCounts[index] ?? 0} matched`, 12)} /${fitText(rule.source, Math.max(8, width - 45))}/`,
      ),
      '',
      'any key closes',
    ];
  }
  const streams = model.streams();
  return [
    c.bold('Streams: j/k move, m mute/unmute, s solo, Enter close'),
    ...streams.map((stream, index) => {
      const state = model.solo === stream.id ? 'solo ' : model.isMuted(stream.id) ? 'muted' : 'shown';
      const line = `${index === keys.pickerIndex ? '›' : ' '} ${state}  ${padText(stream.name, 30)} ${stream.count} posts`;
      return index === keys.pickerIndex ? c.inverse(line) : line;
    }),
  ];
}

function rowLook(props: AppProps, entry: Entry, now: number): Pick<RowProps, 'now' | 'alert' | 'pinned'> {
  const { model } = props;
  const rule = model.alertOf(entry.id);
  const timely =
    entry.text === null || (entry.releasedAtMs !== undefined && now - entry.releasedAtMs < RELEASE_MARK_MS);
  return {
    now: timely ? Math.floor(now / 1000) * 1000 : undefined,
    alert:
      rule === undefined || rule.action === 'mute' ? undefined : rule.action === 'highlight' ? 'highlight' : 'mark',
    pinned: model.isPinned(entry.id),
  };
}

function columnsView(props: AppProps, width: number, height: number, now: number): ReactElement {
  const { model } = props;
  const streams = model
    .streams()
    .filter((stream) => stream.count > 0 && !model.isMuted(stream.id) && (model.solo ?? stream.id) === stream.id)
    .sort((a, b) => b.count - a.count)
    .slice(0, MAX_COLUMNS);
  const columnWidth = Math.floor(width / Math.max(1, streams.length));
  const rows = model.rows();
  return h(
    Box,
    { flexDirection: 'row', height },
    ...streams.map((stream) =>
      h(
        Box,
        { key: stream.id, flexDirection: 'column', width: columnWidth },
        h(
          Text,
          { wrap: 'truncate-end' },
          screenChalk(props.color)[streamColour(stream.id)].bold(padText(stream.name, columnWidth - 1)),
        ),
        ...rows
          .filter((entry) => entry.streamId === stream.id)
          .slice(0, height - 1)
          .map((entry) =>
            h(Row, {
              key: entry.id,
              entry,
              width: columnWidth - 1,
              color: props.color,
              utc: props.utc,
              selected: false,
              streamWidth: 0,
              ...rowLook(props, entry, now),
            }),
          ),
      ),
    ),
  );
}

export function App(props: AppProps): ReactElement {
  const { model, store } = props;
  useSyncExternalStore(store.subscribe, store.frame);
  const { columns: width, rows: height } = useSize();
  const keys = useRef<KeyState>(initialKeyState()).current;
  const offset = useRef(0);
  // The detail pane's lines for one post at one width: a key re-renders no markdown, a resize does.
  const detailCache = useRef<
    { entry: Entry; width: number; markdown: MarkdownRenderer | undefined; lines: string[] } | undefined
  >(undefined);

  const page = Math.max(1, height - 4);
  useInput((input, key) => {
    const effects = splitKeys(input, key).map(([one, press]) => handleKey(model, keys, one, press, page));
    store.now();
    for (const effect of effects) if (effect !== undefined) props.onEffect(effect);
  });

  if (width < MIN_COLUMNS || height < MIN_ROWS) {
    return h(
      Text,
      { wrap: 'truncate-end' },
      `enlarge the terminal: ${MIN_COLUMNS}×${MIN_ROWS} at least, this one is ${width}×${height}`,
    );
  }
  // One line fewer than the screen: Ink redraws a frame that fills the screen by clearing it.
  const lines = height - 1;
  const now = model.now();
  const pinned = model.pinned().slice(0, MAX_PINNED_ROWS);
  const area = lines - 2 - pinned.length;
  const listHeight = model.detailOpen ? Math.max(3, Math.floor(area * 0.4)) : area;
  const detailHeight = area - listHeight;
  const rows = model.rows();
  const selectedIndex = model.selectedIndex();
  if (selectedIndex < offset.current) offset.current = selectedIndex;
  if (selectedIndex >= offset.current + listHeight) offset.current = selectedIndex - listHeight + 1;
  offset.current = Math.max(0, Math.min(offset.current, Math.max(0, rows.length - listHeight)));
  const streamWidth = Math.min(18, Math.max(8, Math.floor(width / 7)));
  const rowProps = (entry: Entry, selected: boolean): RowProps => ({
    entry,
    width,
    color: props.color,
    utc: props.utc,
    selected,
    streamWidth,
    ...rowLook(props, entry, now),
  });

  let body: ReactElement;
  if (keys.overlay !== undefined) {
    body = h(
      Box,
      { flexDirection: 'column', height: area },
      ...overlayLines(props, keys, width)
        .slice(0, area)
        .map((line, index) => h(Text, { key: index, wrap: 'truncate-end' }, line)),
    );
  } else if (model.columns) {
    body = columnsView(props, width, area, now);
  } else {
    const visible = rows.slice(offset.current, offset.current + listHeight);
    const list = h(
      Box,
      { flexDirection: 'column', height: listHeight },
      visible.length === 0
        ? h(Text, { dimColor: props.color }, model.size === 0 ? '  waiting for posts…' : '  nothing matches')
        : visible.map((entry, index) =>
            h(Row, { key: entry.id, ...rowProps(entry, offset.current + index === selectedIndex) }),
          ),
    );
    const selected = rows[selectedIndex];
    let detail: ReactElement | undefined;
    if (model.detailOpen && detailHeight > 1) {
      let cached = detailCache.current;
      const markdown = props.markdown();
      if (
        selected !== undefined &&
        (cached?.entry !== selected || cached.width !== width || cached.markdown !== markdown)
      ) {
        const view: DetailView = {
          width: Math.max(20, width - 2),
          color: props.color,
          hyperlinks: props.hyperlinks,
          utc: props.utc,
          markdown,
        };
        cached = { entry: selected, width, markdown, lines: detailLines(selected, view) };
        detailCache.current = cached;
      }
      const detailLinesShown = selected === undefined || cached === undefined ? [] : cached.lines;
      const scroll = Math.min(model.detailScroll, Math.max(0, detailLinesShown.length - (detailHeight - 1)));
      detail = h(
        Box,
        { flexDirection: 'column', height: detailHeight },
        h(Text, { dimColor: props.color }, '─'.repeat(width)),
        ...detailLinesShown
          .slice(scroll, scroll + detailHeight - 1)
          .map((line, index) => h(Text, { key: `d${index}`, wrap: 'truncate-end' }, ` ${line}`)),
      );
    }
    body = h(Box, { flexDirection: 'column', height: area }, list, detail);
  }

  return h(
    Box,
    { flexDirection: 'column', width, height: lines },
    h(Text, { wrap: 'truncate-end' }, headerLine(props)),
    ...pinned.map((entry) => h(Row, { key: `pin-${entry.id}`, ...rowProps(entry, false) })),
    body,
    h(Text, { wrap: 'truncate-end' }, footerLine(props, keys, width)),
  );
}
