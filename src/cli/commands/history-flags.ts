// `history`'s flags; the command is history.ts, loaded only when it runs.
import { InvalidArgumentError, type Command } from '@commander-js/extra-typings';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import { splitStreamIds } from '../../protocol/stream-ids.js';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, positiveInteger, withKeySource } from '../common.js';

const HISTORY_DEFAULT_LIMIT = 10;

function historyLimit(text: string): number {
  const value = positiveInteger(text);
  if (value > MAX_LAST_POSTS)
    throw new InvalidArgumentError(
      `expected 1 to ${MAX_LAST_POSTS} (the service keeps the last ${MAX_LAST_POSTS} posts per stream), got "${text}"`,
    );
  return value;
}

/** `history`: recent posts through REST. */
export function addHistoryCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode } = context;
  addClientOptions(
    program
      .command('history')
      .description(
        'recent posts through REST, oldest first, printed as listen prints them (GET /v1/streams/{id}/posts)',
      )
      .option(
        '--streams <ids>',
        'comma-separated stream ids (default: every stream you follow or own)',
        (text: string) => splitStreamIds(text),
      )
      .option(
        '--limit <n>',
        `the most recent posts of each stream (1-${MAX_LAST_POSTS})`,
        (text: string) => historyLimit(text),
        HISTORY_DEFAULT_LIMIT,
      ),
  ).action(async (options) => {
    const common = await commonOptions(options, context);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.history({ ...common, streams: options.streams, limit: options.limit }, context),
      ),
    );
  });
}
