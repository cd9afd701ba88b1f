import { fetchStreams } from '../client/rest-read.js';
import type { StreamSummary } from '../protocol/types.js';
import { jsonLine } from '../render/json.js';
import { safeLine } from '../render/text.js';
import { requireKey, type CommonOptions } from './common.js';
import { EXIT } from './exit.js';

export interface StreamsOptions extends CommonOptions {
  /** Only the ids, one per line. */
  ids: boolean;
}

const COLUMNS = ['ID', 'NAME', 'OWNER', 'TARGETS', 'PUBLISH'] as const;

/** A custom stream's targets, the user's own selection marked: `BTC* ETH* SOL` (`*` = selected). */
function targetsCell(stream: StreamSummary): string {
  if (!stream.custom) return '-';
  const selected = new Set(stream.selectedTargets ?? []);
  const marked = stream.customTargets.map((target) => `${safeLine(target)}${selected.has(target) ? '*' : ''}`);
  return marked.length === 0 ? '(none)' : marked.join(' ');
}

function publishCell(stream: StreamSummary): string {
  if (stream.publish === undefined) return '?';
  return stream.publish ? 'yes' : 'no';
}

/** The streams as an aligned table, one row each, every cell one sanitized line. */
export function formatStreamsTable(streams: readonly StreamSummary[]): string {
  const rows = streams.map((stream) => [
    safeLine(stream.id),
    safeLine(stream.name),
    stream.owner === undefined ? '?' : safeLine(stream.owner),
    targetsCell(stream),
    publishCell(stream),
  ]);
  const all = [[...COLUMNS], ...rows];
  const widths = COLUMNS.map((_, column) => Math.max(...all.map((row) => row[column]!.length)));
  const lines = all.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
  const selectedAny = streams.some((stream) => (stream.selectedTargets ?? []).length > 0);
  return `${lines.join('\n')}\n${selectedAny ? '(* a target you selected: you receive its posts)\n' : ''}`;
}

/** `streams`: the key's streams through `GET /v1/streams`. */
export async function streams(options: StreamsOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const list = await fetchStreams(options.settings.endpoints, apiKey, options.timeoutMs);
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
