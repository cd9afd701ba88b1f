// `targets`' subcommands and flags; the command is targets.ts, loaded only when it runs.
import type { Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, withKeySource } from '../common.js';

/** `targets [STREAM]` and `targets set STREAM T1,T2`: the key's selected custom targets. */
export function addTargetsCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode } = context;
  const targets = addClientOptions(
    program
      .command('targets')
      .description(
        "the key's selected custom targets, for one stream or every custom stream it follows (GET /v1/streams)",
      )
      .argument('[stream]', 'the stream id (default: every custom stream you follow)'),
  ).action(async (stream, options) => {
    const common = await commonOptions(options, context);
    setExitCode(await withKeySource(common.settings, () => run.targets({ ...common, stream }, context)));
  });
  // Its client options are the parent's (commander reads them anywhere on the line), and its
  // help lists them.
  targets
    .command('set')
    .configureHelp({ showGlobalOptions: true })
    .description(
      'replace your selected targets on a custom stream you follow: posts for these reach you (POST /v1/streams/{id}/custom-targets)',
    )
    .argument('<stream>', 'the stream id')
    .argument('<targets>', 'comma-separated targets, case-sensitive, e.g. BTC,ETH; "" selects none')
    .action(async (stream, list) => {
      const { parseTargets } = await import('./targets.js');
      const chosen = parseTargets(list);
      const common = await commonOptions(targets.opts(), context);
      setExitCode(
        await withKeySource(common.settings, () => run.targetsSet({ ...common, stream, targets: chosen }, context)),
      );
    });
}
