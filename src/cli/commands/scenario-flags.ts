// `scenario`'s subcommands and flags; the command is scenario.ts, loaded only when it runs.
import type { Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';

export function addScenarioCommand(program: Command, context: CommandContext): void {
  program
    .command('scenario')
    .description('scenarios for serve --scenario')
    .command('from-recording <file>')
    .description(
      'turn `listen --json` output (a file, or - for standard input) into a scenario: same posts, order and timing',
    )
    .option('-o, --output <file>', 'write the scenario (NDJSON) here instead of standard output')
    .option(
      '--json',
      'with --output: print what was written as JSON on stdout (the scenario itself is JSON lines already)',
    )
    .action(async (file, options) =>
      context.setExitCode(
        await context.run.scenarioFromRecording(file, { ...options, json: options.json === true }, context),
      ),
    );
}
