// `streams`' flags; the command is streams.ts, loaded only when it runs.
import type { Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, withKeySource } from '../common.js';

/** `streams`: the key's streams through REST. */
export function addStreamsCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode } = context;
  addClientOptions(
    program
      .command('streams')
      .description(
        "the key's streams: id, name, owner, custom targets, whether the key publishes there (GET /v1/streams)",
      )
      .option('--ids', 'print only the stream ids, one per line (for scripts and shell completion)'),
  ).action(async (options) => {
    const common = await commonOptions(options, context);
    setExitCode(
      await withKeySource(common.settings, () => run.streams({ ...common, ids: options.ids === true }, context)),
    );
  });
}
