// `demo`'s flags; the command is demo.ts, loaded only when it runs.
import { Option, type Command } from '@commander-js/extra-typings';
import { SERVE_OPTIONS } from '../../api/internal.js';
import type { CommandContext } from '../command-context.js';
import { outputOptions, positiveInteger } from '../common.js';
import { parseDuration, parsePort } from '../parse.js';

export function addDemoCommand(program: Command, { run, setExitCode, env }: CommandContext): void {
  program
    .command('demo')
    .description('the one-command showcase: serve with the demo seed, a publisher of sample posts, and the tree view')
    .option('--port <port>', 'port for the embedded serve (a free one if taken)', parsePort, SERVE_OPTIONS.port.default)
    .option('--count <n>', 'stop after publishing N posts (and showing them)', positiveInteger)
    .addOption(new Option('--duration <duration>', 'stop after this long (e.g. 30s, 2m)').argParser(parseDuration))
    .addOption(
      new Option('--interval <duration>', 'time between sample posts').argParser(parseDuration).default(1500, '1.5s'),
    )
    .addOption(
      new Option('--view <view>', 'how to show the posts')
        .choices(['tree', 'listen'] as const)
        .default('tree' as const),
    )
    .option('--terminal', 'show the posts in the full-screen terminal (keys: ? lists them, q quits)')
    .option('--json', 'machine output: the view as JSON lines')
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .option('-q, --quiet', 'no status lines on stderr')
    .option('-v, --verbose', 'more status detail on stderr')
    .action(async (options) => {
      setExitCode(
        await run.demo({
          ...outputOptions(options, env),
          port: options.port,
          count: options.count,
          durationMs: options.duration,
          intervalMs: options.interval,
          view: options.view,
          terminal: options.terminal === true,
        }),
      );
    });
}
