// Over 400 lines on purpose: every command's flags are declared here, in the order --help shows
// them, so the flag set a user sees is one file to read (docs/cli.md is checked against it).
// The commands themselves live in commands/, loaded only when run.
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import packageJson from '../../package.json' with { type: 'json' };
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import { splitStreamIds } from '../protocol/stream-ids.js';
import type { SubscribeCommandName } from '../protocol/types.js';
import { DEFAULTS } from '../server/defaults.js';
import { SERVE_OPTIONS, type ServeOption } from '../api/serve-options.js';
import {
  addClientOptions,
  colorWanted,
  commonOptions,
  outputOptions,
  positiveInteger,
  regex,
  withKeySource,
} from './common.js';
import type { ConfigSetOptions } from './commands/config.js';
import type { DemoOptions } from './commands/demo.js';
import { EXIT, ExitError } from './exit.js';
import { addFaultsCommand } from './commands/faults.js';
import type { ListenOptions } from './commands/listen.js';
import {
  collectList,
  collectUrls,
  parseBytes,
  parseDuration,
  parseNonNegativeInteger,
  parsePort,
  parseTimeout,
} from './parse.js';
import type { PostOptions } from './commands/post.js';
import type { ServeOptions } from './commands/serve.js';
import type { StreamsOptions } from './commands/streams.js';
import type { HistoryOptions } from './commands/history.js';
import type { TargetsOptions, TargetsSetOptions } from './commands/targets.js';
import type { TerminalOptions } from './commands/terminal.js';
import type { CompletionShell } from './completion-shells.js';
import { addCompletionCommand, addHelpCommand, addReadCommands, addTargetsCommand } from './program-utility.js';

/** The command functions the program hands typed options to; tests give their own to check the parsing. */
export interface CommandRunners {
  serve(options: ServeOptions): Promise<number>;
  listen(options: ListenOptions): Promise<number>;
  terminal(options: TerminalOptions): Promise<number>;
  post(options: PostOptions): Promise<number>;
  demo(options: DemoOptions): Promise<number>;
  configSet(name: string, options: ConfigSetOptions): Promise<number>;
  configList(json: boolean): Promise<number>;
  configRemove(name: string, json: boolean): Promise<number>;
  configShowPath(json: boolean): Promise<number>;
  streams(options: StreamsOptions): Promise<number>;
  history(options: HistoryOptions): Promise<number>;
  targets(options: TargetsOptions): Promise<number>;
  targetsSet(options: TargetsSetOptions): Promise<number>;
  completion(shell: CompletionShell, program: Command): Promise<number>;
  scenarioFromRecording(file: string, options: { output?: string | undefined; json: boolean }): Promise<number>;
}

// Each command's module is loaded only when it runs: `--help` must not pay for them.
const LAZY_RUNNERS: CommandRunners = {
  serve: async (options) => (await import('./commands/serve.js')).serve(options),
  listen: async (options) => (await import('./commands/listen.js')).listen(options),
  terminal: async (options) => (await import('./commands/terminal.js')).terminal(options),
  post: async (options) =>
    options.batch
      ? (await import('./commands/post-batch.js')).postBatch(options)
      : (await import('./commands/post.js')).post(options),
  demo: async (options) => (await import('./commands/demo.js')).demo(options),
  configSet: async (name, options) => (await import('./commands/config.js')).configSet(name, options),
  configList: async (json) => (await import('./commands/config.js')).configList(json),
  configRemove: async (name, json) => (await import('./commands/config.js')).configRemove(name, json),
  configShowPath: async (json) => (await import('./commands/config.js')).configShowPath(json),
  streams: async (options) => (await import('./commands/streams.js')).streams(options),
  history: async (options) => (await import('./commands/history.js')).history(options),
  targets: async (options) => (await import('./commands/targets.js')).targets(options),
  targetsSet: async (options) => (await import('./commands/targets.js')).targetsSet(options),
  completion: async (shell, program) => (await import('./commands/completion.js')).completion(shell, program),
  scenarioFromRecording: async (file, options) => (await import('./commands/scenario.js')).fromRecording(file, options),
};

export interface ProgramContext {
  run?: CommandRunners;
  /** Where STREAM_POSTS_* and NO_COLOR are read from. */
  env?: NodeJS.ProcessEnv;
  /** Where a command's exit code goes. */
  setExitCode?: (code: number) => void;
  /** Where commander writes help and parse errors (default: stdout and stderr). */
  output?: { writeOut(text: string): void; writeErr(text: string): void };
}

/** A serve option's default as --help shows it: the doc's wording, without its code marks. */
const shown = (option: ServeOption): string => option.shownDefault.replaceAll('`', '');

/** A byte cap, where 0 means none. */
const parseBytesOrZero = (text: string): number => (text.trim() === '0' ? 0 : parseBytes(text));

function lastPosts(text: string): number {
  const value = parseNonNegativeInteger(text);
  if (value > MAX_LAST_POSTS)
    throw new InvalidArgumentError(
      `expected 0 to ${MAX_LAST_POSTS} (the service keeps the last ${MAX_LAST_POSTS} posts per stream), got "${text}"`,
    );
  return value;
}

function parseSpeed(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0 || value > 1_000_000) {
    throw new InvalidArgumentError(`expected a number above 0 (e.g. 10 for ten times faster), got "${text}"`);
  }
  return value;
}

function addServeCommand(
  program: Command,
  run: CommandRunners,
  setExitCode: (code: number) => void,
  env: NodeJS.ProcessEnv,
): void {
  const S = SERVE_OPTIONS;
  program
    .command('serve')
    .description('run the whole Stream Posts service locally, in memory (for testing clients and bots)')
    .option(S.host.flag, S.host.doc, S.host.default)
    .option(S.port.flag, S.port.doc, parsePort, S.port.default)
    .option(S.seed.flag, S.seed.doc)
    .option(S.tlsCert.flag, S.tlsCert.doc)
    .option(S.tlsKey.flag, S.tlsKey.doc)
    .addOption(
      new Option(S.idempotencyWindowMs.flag, S.idempotencyWindowMs.doc)
        .argParser(parseDuration)
        .default(S.idempotencyWindowMs.default, shown(S.idempotencyWindowMs)),
    )
    .addOption(
      new Option(S.uploadWindowMs.flag, S.uploadWindowMs.doc)
        .argParser(parseTimeout)
        .default(S.uploadWindowMs.default, shown(S.uploadWindowMs)),
    )
    .option(S.rateLimit.flag, S.rateLimit.doc, parseNonNegativeInteger, S.rateLimit.default)
    .addOption(new Option(S.keyRateLimit.flag, S.keyRateLimit.doc).argParser(parseNonNegativeInteger))
    .option(
      S.maxConnectionsPerKey.flag,
      S.maxConnectionsPerKey.doc,
      parseNonNegativeInteger,
      S.maxConnectionsPerKey.default,
    )
    .option(S.maxSubscriptions.flag, S.maxSubscriptions.doc, parseNonNegativeInteger, S.maxSubscriptions.default)
    .option(S.maxPendingCommands.flag, S.maxPendingCommands.doc, positiveInteger, S.maxPendingCommands.default)
    .option(S.maxPendingReleases.flag, S.maxPendingReleases.doc, parseNonNegativeInteger, S.maxPendingReleases.default)
    .addOption(
      new Option(S.maxPendingReleaseBytes.flag, S.maxPendingReleaseBytes.doc)
        .argParser(parseBytesOrZero)
        .default(S.maxPendingReleaseBytes.default, shown(S.maxPendingReleaseBytes)),
    )
    .option(S.maxIdempotencyKeys.flag, S.maxIdempotencyKeys.doc, parseNonNegativeInteger, S.maxIdempotencyKeys.default)
    .addOption(
      new Option(S.maxIdempotencyBytes.flag, S.maxIdempotencyBytes.doc)
        .argParser(parseBytesOrZero)
        .default(S.maxIdempotencyBytes.default, shown(S.maxIdempotencyBytes)),
    )
    .addOption(
      new Option(S.maxBufferedBytes.flag, S.maxBufferedBytes.doc)
        .argParser(parseBytes)
        .default(S.maxBufferedBytes.default, shown(S.maxBufferedBytes)),
    )
    .addOption(
      new Option(S.keepAliveMs.flag, S.keepAliveMs.doc)
        .argParser(parseTimeout)
        .default(S.keepAliveMs.default, shown(S.keepAliveMs)),
    )
    .addOption(
      new Option(S.hostedHiddenPosts.flag, S.hostedHiddenPosts.doc)
        .choices(S.hostedHiddenPosts.choices)
        .default(S.hostedHiddenPosts.default),
    )
    .addOption(new Option(S.logFormat.flag, S.logFormat.doc).choices(S.logFormat.choices).default(S.logFormat.default))
    .option(S.quiet.flag, S.quiet.doc, S.quiet.default)
    .option(S.verbose.flag, S.verbose.doc)
    .option(S.admin.flag, S.admin.doc)
    .option(S.noAdmin.flag, S.noAdmin.doc)
    .addOption(new Option(S.adminToken.flag, S.adminToken.doc).env(S.adminToken.env))
    .addOption(new Option(S.allowedHosts.flag, S.allowedHosts.doc).argParser(collectList).env(S.allowedHosts.env))
    .addOption(new Option(S.allowedOrigins.flag, S.allowedOrigins.doc).argParser(collectList).env(S.allowedOrigins.env))
    .addOption(
      new Option(S.bodyTimeoutMs.flag, S.bodyTimeoutMs.doc)
        .argParser(parseTimeout)
        .default(S.bodyTimeoutMs.default, shown(S.bodyTimeoutMs)),
    )
    .addOption(
      new Option(S.headersTimeoutMs.flag, S.headersTimeoutMs.doc)
        .argParser(parseTimeout)
        .default(S.headersTimeoutMs.default, shown(S.headersTimeoutMs)),
    )
    .option(S.store.flag, S.store.doc, S.store.default)
    .option(S.redisPrefix.flag, S.redisPrefix.doc, S.redisPrefix.default)
    .option(S.resetStore.flag, S.resetStore.doc, S.resetStore.default)
    .option(S.allowEviction.flag, S.allowEviction.doc, S.allowEviction.default)
    .option(S.workers.flag, S.workers.doc, positiveInteger, S.workers.default)
    .option(S.state.flag, S.state.doc)
    .option(S.scenario.flag, S.scenario.doc)
    .option(S.speed.flag, S.speed.doc, parseSpeed)
    .option(S.exitAfterScenario.flag, S.exitAfterScenario.doc)
    .option(S.exec.flag, S.exec.doc)
    .option(S.color.flag, S.color.doc)
    .option(S.json.flag, S.json.doc)
    .action(async (options) => {
      const color = colorWanted(process.stdout, options.color, env);
      const { json, ...rest } = options;
      const logFormat = json === true ? 'json' : options.logFormat;
      setExitCode(await run.serve({ ...rest, logFormat, verbose: options.verbose === true, color }));
    });
}

function addSubscribeCommand(
  program: Command,
  name: 'listen' | 'tree',
  command: SubscribeCommandName,
  description: string,
  { run, setExitCode, env }: Required<Omit<ProgramContext, 'output'>>,
): void {
  addClientOptions(
    program
      .command(name)
      .description(description)
      .option(
        '--streams <ids>',
        'comma-separated stream ids (default: every stream you follow or own)',
        (text: string) => splitStreamIds(text),
      )
      .option('--last <n>', `first show up to N recent posts from each stream (0-${MAX_LAST_POSTS})`, lastPosts, 0)
      .option(
        '--count <n>',
        'exit 0 after N live posts (a release counts as one; posts shown by --last do not count)',
        positiveInteger,
      )
      .addOption(
        new Option(
          '--idle-timeout <duration>',
          'exit 0 when no post arrived for this long (30s, 5m; a bare number is seconds)',
        ).argParser(parseTimeout),
      )
      .option('--match <regex>', 'only posts whose text matches (case-insensitive), matches highlighted', regex)
      .option('--bell', 'ring the terminal bell for each post')
      .option('--utc', 'show times in UTC, marked UTC (default: local time)')
      .option('--no-reconnect', 'end (exit 3) when the connection drops instead of reconnecting')
      .option(
        '--exec <command>',
        'run a shell command for each post, one at a time, with the post as JSON on stdin and STREAM_POSTS_* variables',
      ),
  ).action(async (options) => {
    const common = await commonOptions(options, env);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.listen({
          ...common,
          command,
          streams: options.streams,
          last: options.last,
          count: options.count,
          idleTimeoutMs: options.idleTimeout,
          match: options.match,
          bell: options.bell === true,
          reconnect: options.reconnect,
          exec: options.exec,
          utc: options.utc === true,
        }),
      ),
    );
  });
}

function addTerminalCommand(
  program: Command,
  { run, setExitCode, env }: Required<Omit<ProgramContext, 'output'>>,
): void {
  addClientOptions(
    program
      .command('terminal')
      .description('follow streams full screen: a news terminal with search, filters, pins and alerts')
      .option(
        '--streams <ids>',
        'comma-separated stream ids (default: every stream you follow or own)',
        (text: string) => splitStreamIds(text),
      )
      .option('--last <n>', `first show up to N recent posts from each stream (0-${MAX_LAST_POSTS})`, lastPosts, 20)
      .option('--match <regex>', 'only posts whose text matches (case-insensitive)', regex)
      .option('--utc', 'show times in UTC (default: local time)')
      .option('--buffer <n>', 'posts kept; the oldest go first', positiveInteger, 5000)
      .option(
        '--alert <regex>',
        "ring the bell for a post whose text matches (case-insensitive; repeatable; before the profile's rules)",
        (text: string, previous: string[] | undefined) => [...(previous ?? []), text],
      )
      .option('--no-reconnect', 'end (exit 3) when the connection drops instead of reconnecting'),
  ).action(async (options) => {
    const common = await commonOptions(options, env);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.terminal({
          ...common,
          streams: options.streams,
          last: options.last,
          match: options.match,
          utc: options.utc === true,
          buffer: options.buffer,
          reconnect: options.reconnect,
          alerts: options.alert ?? [],
          profileAlerts: common.settings.alerts,
        }),
      ),
    );
  });
}

/** Starts loading modules a command will await later; a failure shows where they are awaited. */
function preload(...modules: Promise<unknown>[]): void {
  for (const module of modules) module.catch(() => undefined);
}

/** Every error line starts the same way, commander's own ("error: …") included. */
function prefixed(text: string): string {
  return text.replace(/^error: /, 'stream-posts: ');
}

/**
 * Commander's "unknown option" for content such as "-5% at the open" says how to pass it;
 * not when commander recognised a misspelt flag (`--markdwon`: did you mean `--markdown`?).
 */
function hintDashContent(text: string, write: (text: string) => void): void {
  const hint =
    /unknown option '-/.test(text) && !/Did you mean/.test(text)
      ? "hint: use -- before content starting with -: stream-posts post -- '-5% at the open'\n"
      : '';
  write(`${prefixed(text)}${hint}`);
}

function addPostCommand(program: Command, { run, setExitCode, env }: Required<Omit<ProgramContext, 'output'>>): void {
  const command = program
    .command('post')
    .description('publish a post (add-stream-post); --batch publishes NDJSON lines from standard input')
    .argument('[content]', 'the post text; - or a pipe: standard input (content starting with -: put -- before it)')
    .allowExcessArguments()
    .option(
      '-s, --stream <id>',
      "stream to publish to (default: the profile's stream, else the stream of a stream key; prompted for on a terminal)",
    )
    .option('--markdown', 'the content is markdown (same as --content-type markdown)')
    .addOption(new Option('--content-type <type>', 'rawtext or markdown').choices(['rawtext', 'markdown'] as const))
    .option(
      '--release-at <when>',
      "hide the content until then: ISO 8601 with a zone, or +10m, +2h, +1d on the service's clock",
    )
    .option('--allow-past', 'a --release-at in the past publishes at once instead of being refused')
    .option('--custom-target <target>', 'custom target (custom streams only)')
    .option(
      '--idempotency-key <key>',
      'deduplication key (default: a new one per post, so retries never publish twice)',
    )
    .option('-f, --file <file>', 'read the content from a file, or - for standard input')
    .addOption(
      new Option('--via <transport>', 'publish over the WebSocket or the REST form')
        .choices(['ws', 'rest'] as const)
        .default('ws' as const),
    )
    .option('--dry-run', 'validate and print the command; send nothing')
    .option('--batch', 'publish NDJSON lines from standard input, one add-stream-post data object per line')
    .option('--window <n>', 'with --batch: most posts in flight, unacknowledged', positiveInteger, 64);
  command.configureOutput({
    outputError: (text, write) => hintDashContent(text, write),
  });
  addClientOptions(command).action(async (content, options, self) => {
    // The modules this command loads, read side by side instead of one after another.
    preload(
      import('./post-content.js'),
      import('./settings.js'),
      options.batch === true ? import('./commands/post-batch.js') : import('./commands/post.js'),
    );
    if (options.markdown === true && options.contentType === 'rawtext') {
      throw new ExitError(EXIT.usage, '--markdown and --content-type rawtext contradict each other');
    }
    (await import('./post-content.js')).checkExtraArguments(self.args.slice(1));
    if (options.apiKeyStdin === true && options.batch === true && (options.file ?? '-') === '-') {
      throw new ExitError(
        EXIT.usage,
        '--batch reads its posts from standard input, which --api-key-stdin uses for the key: give them with --file FILE',
      );
    }
    const common = await commonOptions(options, env);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.post({
          ...common,
          content,
          stream: options.stream,
          contentType: options.markdown === true ? 'markdown' : (options.contentType ?? 'rawtext'),
          contentTypeGiven: options.markdown === true || options.contentType !== undefined,
          releaseAt: options.releaseAt,
          allowPast: options.allowPast === true,
          customTarget: options.customTarget,
          idempotencyKey: options.idempotencyKey,
          file: options.file,
          via: options.via,
          dryRun: options.dryRun === true,
          batch: options.batch === true,
          window: options.window,
        }),
      ),
    );
  });
}

function addDemoCommand(program: Command, { run, setExitCode, env }: Required<Omit<ProgramContext, 'output'>>): void {
  program
    .command('demo')
    .description('the one-command showcase: serve with the demo seed, a publisher of sample posts, and the tree view')
    .option('--port <port>', 'port for the embedded serve (a free one if taken)', parsePort, DEFAULTS.port)
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

function addConfigCommands(program: Command, { run, setExitCode }: Required<Omit<ProgramContext, 'output'>>): void {
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
    .action(async (name, options) => setExitCode(await run.configSet(name, options)));
  config
    .command('list')
    .description('list profiles (keys are never shown)')
    .option('--json', 'one JSON object per profile')
    .action(async (options) => setExitCode(await run.configList(options.json === true)));
  config
    .command('remove <name>')
    .description('delete a profile')
    .option('--json', 'print what was removed as JSON on stdout')
    .action(async (name, options) => setExitCode(await run.configRemove(name, options.json === true)));
  config
    .command('path')
    .description('print where the config file is')
    .option('--json', 'print it as {"path": …}')
    .action(async (options) => setExitCode(await run.configShowPath(options.json === true)));
  addHelpCommand(config);
}

/**
 * The whole command line: flags in, a typed options object out to a command function.
 * Parse errors throw CommanderError (exitOverride) after commander printed them.
 */
export function buildProgram(context: ProgramContext = {}): Command {
  const full: Required<Omit<ProgramContext, 'output'>> = {
    run: context.run ?? LAZY_RUNNERS,
    env: context.env ?? process.env,
    setExitCode:
      context.setExitCode ??
      ((code) => {
        process.exitCode = code;
      }),
  };
  const program = new Command('stream-posts')
    .description('Follow, publish and serve Stream Posts over WebSocket.')
    .version(packageJson.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      ...context.output,
      outputError: (text, write) => write(prefixed(text)),
    })
    .helpCommand(false)
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
  addServeCommand(program, full.run, full.setExitCode, full.env);
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
  addReadCommands(program, full);
  addTargetsCommand(program, full);
  addFaultsCommand(program, full.setExitCode);
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
      full.setExitCode(await full.run.scenarioFromRecording(file, { ...options, json: options.json === true })),
    );
  addCompletionCommand(program, full);
  addHelpCommand(program);
  return program;
}
