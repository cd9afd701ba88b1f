import type { RestStream } from '../../index.js';
import {
  fetchStreamFrom as fetchStream,
  fetchStreamsFrom as fetchStreams,
  setCustomTargetsAt as setCustomTargets,
} from '../../api/internal.js';
import { jsonLine } from '../../render/json.js';
import { safeLine } from '../../render/text.js';
import { requireKey, type CommonOptions } from '../common.js';
import { EXIT, usageError } from '../exit.js';

export interface TargetsOptions extends CommonOptions {
  /** Undefined: every custom stream the key's user follows. */
  stream: string | undefined;
}

export interface TargetsSetOptions extends CommonOptions {
  stream: string;
  /** The whole new selection (empty clears it). */
  targets: string[];
}

/** One stream's selection as `targets` prints it. */
interface Selection {
  streamId: string;
  name: string;
  /** Undefined: the service gives none (the key owns the stream and gets every target, or does not follow it). */
  selectedTargets: string[] | undefined;
  customTargets: string[];
}

const selectionOf = (stream: RestStream): Selection => ({
  streamId: stream.id,
  name: stream.name,
  selectedTargets: stream.selectedTargets,
  customTargets: stream.customTargets,
});

/**
 * Every custom stream the key's user follows, with its selection: from the list when it
 * carries the selections, else from each stream's own page.
 */
async function followedSelections(options: TargetsOptions, apiKey: string): Promise<Selection[]> {
  const { endpoints } = options.settings;
  const listed = await fetchStreams(endpoints, apiKey, options.timeoutMs);
  const marked = listed.some((stream) => stream.following !== undefined);
  const custom = listed.filter((stream) => stream.custom && (!marked || stream.following === true));
  const complete = await Promise.all(
    custom.map((stream) =>
      stream.selectedTargets !== undefined || stream.publish === true
        ? stream
        : fetchStream(endpoints, apiKey, stream.id, options.timeoutMs),
    ),
  );
  return complete.map(selectionOf);
}

function targetList(targets: readonly string[]): string {
  return targets.length === 0 ? '(none)' : targets.map(safeLine).join(' ');
}

function print(selections: readonly Selection[], options: CommonOptions): void {
  if (options.json) {
    process.stdout.write(selections.map((selection) => `${jsonLine(selection)}\n`).join(''));
    return;
  }
  const rows = selections.map((selection) => [
    safeLine(selection.streamId),
    safeLine(selection.name),
    selection.selectedTargets === undefined ? '-' : targetList(selection.selectedTargets),
    targetList(selection.customTargets),
  ]);
  const all = [['STREAM', 'NAME', 'SELECTED', 'OFFERED'], ...rows];
  const widths = [0, 1, 2].map((column) => Math.max(...all.map((row) => row[column]!.length)));
  process.stdout.write(
    all
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n',
  );
}

/** `targets [STREAM]`: the key's selected custom targets. */
export async function targets(options: TargetsOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const selections =
    options.stream === undefined
      ? await followedSelections(options, apiKey)
      : [selectionOf(await fetchStream(options.settings.endpoints, apiKey, options.stream, options.timeoutMs))];
  if (selections.length > 0) print(selections, options);
  else if (!options.quiet && !options.json) process.stderr.write('stream-posts: this key follows no custom streams\n');
  return EXIT.ok;
}

/** `targets set STREAM T1,T2`: replaces the selection (POST /v1/streams/{id}/custom-targets). */
export async function targetsSet(options: TargetsSetOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const kept = await setCustomTargets(
    options.settings.endpoints,
    apiKey,
    options.stream,
    options.targets,
    options.timeoutMs,
  );
  if (options.json) process.stdout.write(`${jsonLine({ streamId: options.stream, customTargets: kept })}\n`);
  else process.stdout.write(`${safeLine(options.stream)}: ${targetList(kept)}\n`);
  return EXIT.ok;
}

/** `T1,T2` as the targets to select: case kept, spaces around each dropped; "" selects none. */
export function parseTargets(text: string): string[] {
  const targets = text
    .split(',')
    .map((target) => target.trim())
    .filter((target) => target !== '');
  if (targets.length === 0 && text.trim() !== '') throw usageError(`no targets in "${safeLine(text)}": give T1,T2`);
  return targets;
}
