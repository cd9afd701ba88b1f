// `config`'s subcommands and flags; the commands are config.ts, loaded only when they run.
import type { Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { collectUrls } from '../parse.js';
import { addHelpCommand } from '../help-command.js';

export function addConfigCommands(program: Command, context: CommandContext): void {
  const config = program
    .command('config')
    .description(
      'named profiles of URL and key, in $XDG_CONFIG_HOME/stream-posts/config.json (use with --profile NAME)',
    );
  config
    .command('set <name>')
    .description('create or update a profile (a profile named "default" applies when none is chosen)')
    .option('--url <url>', 'service base URL; repeat it or separate with commas for several instances', collectUrls)
    .option('--api-key <key>', 'API key (visible in `ps`: prefer the two below)')
    .option('--api-key-file <file>', 'read the key from this file')
    .option('--api-key-stdin', 'read the key from standard input (typed hidden on a terminal)')
    .option('--stream <id>', 'the stream `post` publishes to when --stream is not given')
    .option('--json', 'print the profile saved as JSON on stdout (never the key)')
    .action(async (name, options) => context.setExitCode(await context.run.configSet(name, options, context)));
  config
    .command('list')
    .description('list profiles (keys are never shown)')
    .option('--json', 'one JSON object per profile')
    .action(async (options) => context.setExitCode(await context.run.configList(options.json === true, context)));
  config
    .command('remove <name>')
    .description('delete a profile')
    .option('--json', 'print what was removed as JSON on stdout')
    .action(async (name, options) =>
      context.setExitCode(await context.run.configRemove(name, options.json === true, context)),
    );
  config
    .command('path')
    .description('print where the config file is')
    .option('--json', 'print it as {"path": …}')
    .action(async (options) => context.setExitCode(await context.run.configShowPath(options.json === true, context)));
  addHelpCommand(config);
}
