import { Argument, InvalidArgumentError, type Command } from '@commander-js/extra-typings';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import { splitStreamIds } from '../protocol/stream-ids.js';
import { addClientOptions, commonOptions, positiveInteger, withKeySource } from './common.js';
import { COMPLETION_SHELLS } from './completion-shells.js';
import { EXIT } from './exit.js';
import type { CommandContext } from './command-context.js';

// `streams`, `history`, `targets`, `completion` and `help`: the commands around the main ones.

/** `streams` and `history`: what the key can read through REST. */
export function addReadCommands(program: Command, { run, setExitCode, env }: CommandContext): void {
  addClientOptions(
    program
      .command('streams')
      .description(
        "the key's streams: id, name, owner, custom targets, whether the key publishes there (GET /v1/streams)",
      )
      .option('--ids', 'print only the stream ids, one per line (for scripts and shell completion)'),
  ).action(async (options) => {
    const common = await commonOptions(options, env);
    setExitCode(await withKeySource(common.settings, () => run.streams({ ...common, ids: options.ids === true })));
  });
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
    const common = await commonOptions(options, env);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.history({ ...common, streams: options.streams, limit: options.limit }),
      ),
    );
  });
}

/** `targets [STREAM]` and `targets set STREAM T1,T2`: the key's selected custom targets. */
export function addTargetsCommand(program: Command, { run, setExitCode, env }: CommandContext): void {
  const targets = addClientOptions(
    program
      .command('targets')
      .description(
        "the key's selected custom targets, for one stream or every custom stream it follows (GET /v1/streams)",
      )
      .argument('[stream]', 'the stream id (default: every custom stream you follow)'),
  ).action(async (stream, options) => {
    const common = await commonOptions(options, env);
    setExitCode(await withKeySource(common.settings, () => run.targets({ ...common, stream })));
  });
  // Its client options are the parent's (commander reads them anywhere on the line).
  targets
    .command('set')
    .description(
      'replace your selected targets on a custom stream you follow: posts for these reach you (POST /v1/streams/{id}/custom-targets)',
    )
    .argument('<stream>', 'the stream id')
    .argument('<targets>', 'comma-separated targets, case-sensitive, e.g. BTC,ETH; "" selects none')
    .action(async (stream, list) => {
      const { parseTargets } = await import('./commands/targets.js');
      const chosen = parseTargets(list);
      const common = await commonOptions(targets.opts(), env);
      setExitCode(await withKeySource(common.settings, () => run.targetsSet({ ...common, stream, targets: chosen })));
    });
}

const HISTORY_DEFAULT_LIMIT = 10;

function historyLimit(text: string): number {
  const value = positiveInteger(text);
  if (value > MAX_LAST_POSTS)
    throw new InvalidArgumentError(
      `expected 1 to ${MAX_LAST_POSTS} (the service keeps the last ${MAX_LAST_POSTS} posts per stream), got "${text}"`,
    );
  return value;
}

export function addCompletionCommand(program: Command, { run, setExitCode }: CommandContext): void {
  program
    .command('completion')
    .description('print a shell completion script (see the README for where to put it)')
    .addArgument(new Argument('<shell>', 'the shell').choices(COMPLETION_SHELLS))
    .action(async (shell) => setExitCode(await run.completion(shell, program)));
}

/** `help [command]`: commander's own prints the general help for a command it does not know, and says nothing. */
export function addHelpCommand(parent: Command): void {
  parent
    .command('help')
    .description('display help for command')
    .argument('[command]', 'the command')
    .action((name) => {
      if (name === undefined) parent.help();
      const command = parent.commands.find((each) => each.name() === name || each.aliases().includes(name));
      if (command === undefined || command.name() === 'help') {
        parent.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: EXIT.usage });
      }
      command.help();
    });
}
