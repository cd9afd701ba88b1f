import type { Command } from '@commander-js/extra-typings';
import { EXIT } from './exit.js';

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
