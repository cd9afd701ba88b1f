// The command line as a whole: which commands there are, in the order --help shows them, and
// the module each runs. Each command's flags sit beside it in commands/ (`<command>-flags.ts`,
// small, loaded at start-up); the command itself is loaded only when it runs.
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import packageJson from '../../package.json' with { type: 'json' };
import type { CommandContext, CommandRunners, ProgramContext } from './command-context.js';
import { addCompletionCommand } from './commands/completion-flags.js';
import { addConfigCommands } from './commands/config-flags.js';
import { addDemoCommand } from './commands/demo-flags.js';
import { addDoctorCommand } from './commands/doctor-flags.js';
import { addFaultsCommand } from './commands/faults-flags.js';
import { addHistoryCommand } from './commands/history-flags.js';
import { addSubscribeCommand } from './commands/listen-flags.js';
import { addPostCommand } from './commands/post-flags.js';
import { addScenarioCommand } from './commands/scenario-flags.js';
import { addServeCommand } from './commands/serve-flags.js';
import { addStreamsCommand } from './commands/streams-flags.js';
import { addTargetsCommand } from './commands/targets-flags.js';
import { addTerminalCommand } from './commands/terminal-flags.js';
import { prefixed } from './exit.js';
import { addHelpCommand } from './help-command.js';

export type { CommandRunners, ProgramContext } from './command-context.js';

// Each command's module is loaded only when it runs: `--help` must not pay for them.
const LAZY_RUNNERS: CommandRunners = {
  serve: async (options, io) => (await import('./commands/serve.js')).serve(options, io),
  listen: async (options, io) => (await import('./commands/listen.js')).listen(options, io),
  terminal: async (options, io) => (await import('./commands/terminal.js')).terminal(options, io),
  post: async (options, io) =>
    options.batch
      ? (await import('./commands/post-batch.js')).postBatch(options, io)
      : (await import('./commands/post.js')).post(options, io),
  demo: async (options, io) => (await import('./commands/demo.js')).demo(options, io),
  configSet: async (name, options, io) => (await import('./commands/config.js')).configSet(name, options, io),
  configList: async (json, io) => (await import('./commands/config.js')).configList(json, io),
  configRemove: async (name, json, io) => (await import('./commands/config.js')).configRemove(name, json, io),
  configShowPath: async (json, io) => (await import('./commands/config.js')).configShowPath(json, io),
  streams: async (options, io) => (await import('./commands/streams.js')).streams(options, io),
  history: async (options, io) => (await import('./commands/history.js')).history(options, io),
  targets: async (options, io) => (await import('./commands/targets.js')).targets(options, io),
  targetsSet: async (options, io) => (await import('./commands/targets.js')).targetsSet(options, io),
  completion: async (shell, program, io) => (await import('./commands/completion.js')).completion(shell, program, io),
  doctor: async (options, io) => (await import('./commands/doctor.js')).doctor(options, io),
  scenarioFromRecording: async (file, options, io) =>
    (await import('./commands/scenario.js')).fromRecording(file, options, io),
};

/**
 * Flags that fall back to a variable (`.env()`: --admin-token, --allowed-hosts…) read it from
 * the context's environment. Commander reads process.env itself, which is the context's when
 * the entry runs the program; a variable it found there is left as it took it.
 */
function optionsFromEnv(command: CommandUnknownOpts, env: NodeJS.ProcessEnv): void {
  for (const option of command.options) {
    const value = option.envVar === undefined ? undefined : env[option.envVar];
    const source = command.getOptionValueSource(option.attributeName());
    if (value === undefined || source === 'cli' || source === 'env') continue;
    // What commander's own reading does: the option's parser takes the value.
    const events = command as unknown as NodeJS.EventEmitter;
    if (option.required || option.optional) events.emit(`optionEnv:${option.name()}`, value);
    else events.emit(`optionEnv:${option.name()}`);
  }
}

/**
 * The whole command line: flags in, a typed options object out to a command function.
 * Parse errors throw CommanderError (exitOverride) after commander printed them.
 */
export function buildProgram(context: ProgramContext): Command {
  const { output, ...given } = context;
  const full: CommandContext = { ...given, run: context.run ?? LAZY_RUNNERS };
  const { stdout, stderr } = context.streams;
  const program = new Command('stream-posts')
    .description('Follow, publish and serve Stream Posts over WebSocket.')
    .version(packageJson.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => stdout.write(text),
      writeErr: (text) => stderr.write(text),
      ...output,
      outputError: (text, write) => write(prefixed(text)),
    })
    .helpCommand(false)
    .hook('preAction', (_program, command) => optionsFromEnv(command, context.env))
    .addHelpText(
      'after',
      `
Examples:
  stream-posts demo                                        serve + sample publisher + tree view
  STREAM_POSTS_API_KEY=sp_demo_reader_alice stream-posts listen --last 2
  stream-posts post --stream macro-wire --api-key-file key.txt --markdown '**Fed holds** $BTC'
  stream-posts post --batch --stream macro-wire < posts.ndjson

Durations (--timeout, --idle-timeout, serve's --keep-alive, …): 500ms, 30s, 10m, 2h, 1d;
a number without a unit is seconds.

Exit codes: 0 ok (Ctrl-C on listen, tree, demo too); 1 refused by the service;
2 bad usage or input (nothing sent); 3 cannot connect or authenticate, or no answer
within --timeout.`,
    );
  addServeCommand(program, full);
  addSubscribeCommand(
    program,
    'listen',
    'on-stream-post',
    'follow streams: print posts as they arrive (on-stream-post)',
    full,
  );
  addSubscribeCommand(
    program,
    'tree',
    'on-stream-post-tree',
    'follow streams as a news terminal: tree items, markdown rendered (on-stream-post-tree)',
    full,
  );
  addTerminalCommand(program, full);
  addPostCommand(program, full);
  addDemoCommand(program, full);
  addConfigCommands(program, full);
  addStreamsCommand(program, full);
  addHistoryCommand(program, full);
  addTargetsCommand(program, full);
  addFaultsCommand(program, full);
  addScenarioCommand(program, full);
  addDoctorCommand(program, full);
  addCompletionCommand(program, full);
  addHelpCommand(program);
  return program;
}
