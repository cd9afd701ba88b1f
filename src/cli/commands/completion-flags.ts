// `completion`'s argument; the command is completion.ts, loaded only when it runs.
import { Argument, type Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { COMPLETION_SHELLS } from '../completion-shells.js';

export function addCompletionCommand(program: Command, context: CommandContext): void {
  program
    .command('completion')
    .description('print a shell completion script (see the README for where to put it)')
    .addArgument(new Argument('<shell>', 'the shell').choices(COMPLETION_SHELLS))
    .action(async (shell) => context.setExitCode(await context.run.completion(shell, program, context)));
}
