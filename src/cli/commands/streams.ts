import { StreamPostsError, type RestStream } from '../../index.js';
import { openClient, fetchStreamsFrom as fetchStreams, commandFailure } from '../../api/internal.js';
import { jsonLine } from '../../render/json.js';
import { safeLine } from '../../render/text.js';
import { requireKey, type CommonOptions } from '../common.js';
import { wsWhere } from '../describe.js';
import { EXIT } from '../exit.js';

export interface StreamsOptions extends CommonOptions {
  /** Only the ids, one per line. */
  ids: boolean;
}

/** A stream as far as the service said: from `connected` alone, only its id (and maybe whether the key publishes). */
export type StreamRow = Pick<RestStream, 'id'> & Partial<RestStream>;

const DESCRIPTION_WIDTH = 60;
const yesNo = (value: boolean | undefined) => (value === undefined ? '?' : value ? 'yes' : 'no');

/** A custom stream's targets, the user's own selection marked: `BTC* ETH* SOL` (`*` = selected). */
function targetsCell(stream: StreamRow): string {
  if (stream.custom === undefined) return '?';
  if (!stream.custom) return '-';
  const selected = new Set(stream.selectedTargets ?? []);
  const marked = (stream.customTargets ?? []).map((target) => `${safeLine(target)}${selected.has(target) ? '*' : ''}`);
  return marked.length === 0 ? '(none)' : marked.join(' ');
}

function descriptionCell(stream: StreamRow): string {
  const text = safeLine(stream.description ?? '');
  return text.length > DESCRIPTION_WIDTH ? `${text.slice(0, DESCRIPTION_WIDTH - 1)}…` : text;
}

/**
 * The columns, each shown when the service gave its field for some stream: a service that
 * leaves out this contract's additions (owner, following, publish) gets no column of `?`s.
 */
const COLUMNS: { title: string; cell: (stream: StreamRow) => string; given?: (stream: StreamRow) => boolean }[] = [
  { title: 'ID', cell: (stream) => safeLine(stream.id) },
  { title: 'NAME', cell: (stream) => (stream.name === undefined ? '?' : safeLine(stream.name)) },
  { title: 'OWNER', cell: (stream) => safeLine(stream.owner ?? '?'), given: (stream) => stream.owner !== undefined },
  {
    title: 'FOLLOWING',
    cell: (stream) => yesNo(stream.following),
    given: (stream) => stream.following !== undefined,
  },
  {
    title: 'FEATURED',
    cell: (stream) => (stream.isFeatured ? 'yes' : stream.isFeatured === undefined ? '?' : '-'),
    given: (stream) => stream.isFeatured !== undefined,
  },
  { title: 'TARGETS', cell: targetsCell },
  { title: 'PUBLISH', cell: (stream) => yesNo(stream.publish), given: (stream) => stream.publish !== undefined },
  { title: 'DESCRIPTION', cell: descriptionCell, given: (stream) => (stream.description ?? '') !== '' },
];

/** The streams as an aligned table, one row each, every cell one sanitized line. */
export function formatStreamsTable(streams: readonly StreamRow[]): string {
  const columns = COLUMNS.filter((column) => column.given === undefined || streams.some(column.given));
  const all = [
    columns.map((column) => column.title),
    ...streams.map((stream) => columns.map((column) => column.cell(stream))),
  ];
  const widths = columns.map((_, column) => Math.max(...all.map((row) => row[column]!.length)));
  const lines = all.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
  const selectedAny = streams.some((stream) => (stream.selectedTargets ?? []).length > 0);
  return `${lines.join('\n')}\n${selectedAny ? '(* a target you selected: you receive its posts)\n' : ''}`;
}

/**
 * A service without `GET /v1/streams` (PROTOCOL.md B6 is this contract's) still names the
 * user's streams in its `connected` event, and a stream key's own stream as `streamId`.
 */
async function streamsFromConnected(options: StreamsOptions, apiKey: string): Promise<StreamRow[]> {
  let client;
  try {
    client = await openClient(options.settings.endpoints, {
      apiKey,
      authQuery: options.authQuery,
      reconnect: false,
      timeoutMs: options.timeoutMs,
    });
  } catch (error) {
    throw commandFailure(error, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  }
  const { streamId, streams: ids = [] } = client;
  await client.close();
  return ids.map((id) => ({ id, ...(streamId === undefined ? {} : { publish: id === streamId }) }));
}

/** `streams`: the streams through `GET /v1/streams` (every page), or the `connected` event where there is none. */
export async function streams(options: StreamsOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  let list: StreamRow[];
  try {
    list = await fetchStreams(options.settings.endpoints, apiKey, options.timeoutMs);
  } catch (error) {
    if (!(error instanceof StreamPostsError && (error.code === 'not-found' || error.status === 404))) throw error;
    if (options.verbose) process.stderr.write('stream-posts: no GET /v1/streams there: asking the WebSocket instead\n');
    list = await streamsFromConnected(options, apiKey);
  }
  let text: string;
  if (options.json) text = list.map((stream) => `${jsonLine(stream)}\n`).join('');
  else if (options.ids) text = list.map((stream) => `${safeLine(stream.id)}\n`).join('');
  else if (list.length === 0) text = '';
  else text = formatStreamsTable(list);
  process.stdout.write(text);
  if (list.length === 0 && !options.quiet && !options.json && !options.ids)
    process.stderr.write('stream-posts: this key follows and owns no streams\n');
  return EXIT.ok;
}
