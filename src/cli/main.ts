import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { splitStreamIds } from '../protocol/stream-ids.js';
import { MAX_LAST_POSTS } from '../protocol/limits.js';
import type { SubscribeCommandName } from '../protocol/types.js';
import { DEFAULTS } from '../server/defaults.js';
import { ClientError } from '../client/errors.js';
import { addClientOptions, colorWanted, commonOptions, exitCodeFor, outputOptions, positiveInteger, regex } from './common.js';
import { EXIT, ExitError } from './exit.js';
import { parseBytes, parseDuration, parseNonNegativeInteger, parsePort } from './parse.js';

function lastPosts(text: string): number {
  const value = parseNonNegativeInteger(text);
  if (value > MAX_LAST_POSTS) throw new InvalidArgumentError(`expected 0 to ${MAX_LAST_POSTS} (the service keeps the last ${MAX_LAST_POSTS} posts per stream), got "${text}"`);
  return value;
}

function addSubscribeCommand(program: Command, name: 'listen' | 'tree', command: SubscribeCommandName, description: string): void {
  addClientOptions(
    program
      .command(name)
      .description(description)
      .option('--streams <ids>', 'comma-separated stream ids (default: every stream you follow or own)', (text: string) => splitStreamIds(text))
      .option('--last <n>', `first show up to N recent posts from each stream (0-${MAX_LAST_POSTS})`, lastPosts, 0)
      .option('--count <n>', 'exit 0 after N posts (a release counts as one)', positiveInteger)
      .addOption(new Option('--idle-timeout <duration>', 'exit 0 when no post arrived for this long (e.g. 30s, 5m)').argParser(parseDuration))
      .option('--match <regex>', 'only posts whose text matches (case-insensitive), matches highlighted', regex)
      .option('--bell', 'ring the terminal bell for each post')
      .option('--no-reconnect', 'end (exit 3) when the connection drops instead of reconnecting'),
  ).action(async (options: Record<string, unknown>) => {
    const common = await commonOptions(options);
    const { listen } = await import('./listen.js');
    process.exitCode = await listen({
      ...common,
      command,
      streams: options['streams'] as string[] | undefined,
      last: options['last'] as number,
      count: options['count'] as number | undefined,
      idleTimeoutMs: options['idleTimeout'] as number | undefined,
      match: options['match'] as RegExp | undefined,
      bell: options['bell'] === true,
      reconnect: options['reconnect'] !== false,
    });
  });
}

function buildProgram(): Command {
  const program = new Command('stream-posts')
    .description('Follow, publish and serve Stream Posts over WebSocket.')
    .version(packageJson.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .addHelpText(
      'after',
      `
Examples:
  stream-posts demo                                        serve + sample publisher + tree view
  STREAM_POSTS_API_KEY=sp_demo_reader_alice stream-posts listen --last 2
  stream-posts post --stream macro-wire --api-key-file key.txt --markdown '**Fed holds** $BTC'
  stream-posts post --batch --stream macro-wire < posts.ndjson

Exit codes: 0 ok; 1 refused by the service; 2 bad usage or input (nothing sent);
3 cannot connect or authenticate.`,
    );

  program
    .command('serve')
    .description('run the whole Stream Posts service locally, in memory (for testing clients and bots)')
    .option('--host <host>', 'address to bind', DEFAULTS.host)
    .option('--port <port>', 'port to listen on; 0 picks a free port', parsePort, DEFAULTS.port)
    .option('--seed <file>', 'JSON seed file of users, streams and posts (default: built-in demo seed)')
    .option('--tls-cert <file>', 'PEM certificate: serve wss:// and https://')
    .option('--tls-key <file>', 'PEM private key for --tls-cert')
    .addOption(
      new Option('--idempotency-window <duration>', 'how long an idempotencyKey deduplicates')
        .argParser(parseDuration)
        .default(DEFAULTS.idempotencyWindowMs, '10m'),
    )
    .option('--rate-limit <n>', 'commands per second per connection (burst twice that); 0 turns it off', parseNonNegativeInteger, DEFAULTS.rateLimit)
    .addOption(
      new Option('--max-buffered <bytes>', 'bytes queued for one subscriber before it is closed with 1013')
        .argParser(parseBytes)
        .default(DEFAULTS.maxBufferedBytes, '8MiB'),
    )
    .addOption(
      new Option('--keep-alive <duration>', 'ping interval; an unanswered ping ends the connection')
        .argParser(parseDuration)
        .default(DEFAULTS.keepAliveMs, '30s'),
    )
    .addOption(new Option('--log-format <format>', 'log line format').choices(['text', 'json']).default('text'))
    .option('--quiet', 'print only the listening line; no logs', false)
    .option('--admin', 'enable /_admin endpoints (default: only when bound to loopback)')
    .option('--no-admin', 'disable /_admin endpoints')
    .option('--exec <command>', 'run a command against the server, then stop; exits with its exit code')
    .option('--no-color', 'no colours in output')
    .action(async (options: Record<string, unknown>) => {
      const { serve } = await import('./serve.js');
      process.exitCode = await serve({
        host: options['host'] as string,
        port: options['port'] as number,
        seed: options['seed'] as string | undefined,
        tlsCert: options['tlsCert'] as string | undefined,
        tlsKey: options['tlsKey'] as string | undefined,
        idempotencyWindow: options['idempotencyWindow'] as number,
        rateLimit: options['rateLimit'] as number,
        maxBuffered: options['maxBuffered'] as number,
        keepAlive: options['keepAlive'] as number,
        logFormat: options['logFormat'] as 'text' | 'json',
        quiet: options['quiet'] as boolean,
        admin: options['admin'] as boolean | undefined,
        exec: options['exec'] as string | undefined,
        color: colorWanted(process.stdout, options['color'] as boolean | undefined),
      });
    });
  addSubscribeCommand(program, 'listen', 'on-stream-post', 'follow streams: print posts as they arrive (on-stream-post)');
  addSubscribeCommand(program, 'tree', 'on-stream-post-tree', 'follow streams as a news terminal: tree items, markdown rendered (on-stream-post-tree)');

  addClientOptions(
    program
      .command('post')
      .description('publish a post (add-stream-post); --batch publishes NDJSON lines from standard input')
      .argument('[content]', 'the post text (or --file)')
      .option('-s, --stream <id>', 'stream to publish to (required; prompted for on a terminal)')
      .option('--markdown', 'the content is markdown (same as --content-type markdown)')
      .addOption(new Option('--content-type <type>', 'rawtext or markdown').choices(['rawtext', 'markdown']))
      .option('--release-at <when>', 'hide the content until then: ISO 8601 with a zone, or +10m, +2h, +1d')
      .option('--custom-target <target>', 'custom target (custom streams only)')
      .option('--idempotency-key <key>', 'deduplication key (default: a new one per post, so retries never publish twice)')
      .option('-f, --file <file>', 'read the content from a file, or - for standard input')
      .addOption(new Option('--via <transport>', 'publish over the WebSocket or the REST form').choices(['ws', 'rest']).default('ws'))
      .option('--dry-run', 'validate and print the command; send nothing')
      .option('--batch', 'publish NDJSON lines from standard input, one add-stream-post data object per line')
      .option('--window <n>', 'with --batch: most posts in flight, unacknowledged', positiveInteger, 64),
  ).action(async (content: string | undefined, options: Record<string, unknown>) => {
    if (options['markdown'] === true && options['contentType'] === 'rawtext') {
      throw new ExitError(EXIT.usage, '--markdown and --content-type rawtext contradict each other');
    }
    const common = await commonOptions(options);
    const { post } = options['batch'] === true ? { post: (await import('./post-batch.js')).postBatch } : await import('./post.js');
    process.exitCode = await post({
      ...common,
      content,
      stream: options['stream'] as string | undefined,
      contentType: options['markdown'] === true ? 'markdown' : ((options['contentType'] as 'rawtext' | 'markdown' | undefined) ?? 'rawtext'),
      releaseAt: options['releaseAt'] as string | undefined,
      customTarget: options['customTarget'] as string | undefined,
      idempotencyKey: options['idempotencyKey'] as string | undefined,
      file: options['file'] as string | undefined,
      via: options['via'] as 'ws' | 'rest',
      dryRun: options['dryRun'] === true,
      batch: options['batch'] === true,
      window: options['window'] as number,
    });
  });
  program
    .command('demo')
    .description('the one-command showcase: serve with the demo seed, a publisher of sample posts, and the tree view')
    .option('--port <port>', 'port for the embedded serve (a free one if taken)', parsePort, DEFAULTS.port)
    .option('--count <n>', 'stop after publishing N posts (and showing them)', positiveInteger)
    .addOption(new Option('--duration <duration>', 'stop after this long (e.g. 30s, 2m)').argParser(parseDuration))
    .addOption(new Option('--interval <duration>', 'time between sample posts').argParser(parseDuration).default(1500, '1.5s'))
    .addOption(new Option('--view <view>', 'how to show the posts').choices(['tree', 'listen']).default('tree'))
    .option('--json', 'machine output: the view as JSON lines')
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .option('-q, --quiet', 'no status lines on stderr')
    .option('-v, --verbose', 'more status detail on stderr')
    .action(async (options: Record<string, unknown>) => {
      const { demo } = await import('./demo.js');
      process.exitCode = await demo({
        ...outputOptions(options),
        port: options['port'] as number,
        count: options['count'] as number | undefined,
        durationMs: options['duration'] as number | undefined,
        intervalMs: options['interval'] as number,
        view: options['view'] as 'tree' | 'listen',
      });
    });
  const config = program
    .command('config')
    .description('named profiles of URL and key, in $XDG_CONFIG_HOME/stream-posts/config.json (use with --profile NAME)');
  config
    .command('set <name>')
    .description('create or update a profile (a profile named "default" applies when none is chosen)')
    .option('--url <url>', 'service base URL')
    .option('--api-key <key>', 'API key (visible in `ps`: prefer the two below)')
    .option('--api-key-file <file>', 'read the key from this file')
    .option('--api-key-stdin', 'read the key from standard input')
    .action(async (name: string, options: Record<string, unknown>) => {
      const { configSet } = await import('./config.js');
      process.exitCode = await configSet(name, options);
    });
  config
    .command('list')
    .description('list profiles (keys are never shown)')
    .option('--json', 'one JSON object per profile')
    .action(async (options: Record<string, unknown>) => {
      const { configList } = await import('./config.js');
      process.exitCode = await configList(options['json'] === true);
    });
  config
    .command('remove <name>')
    .description('delete a profile')
    .action(async (name: string) => {
      const { configRemove } = await import('./config.js');
      process.exitCode = await configRemove(name);
    });
  config
    .command('path')
    .description('print where the config file is')
    .action(async () => {
      const { configShowPath } = await import('./config.js');
      process.exitCode = configShowPath();
    });
  return program;
}

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed its message; help and version are successes.
      process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    if (error instanceof ClientError) {
      process.stderr.write(`stream-posts: ${error.message}\n`);
      process.exitCode = exitCodeFor(error);
      return;
    }
    if (error instanceof ExitError) {
      process.stderr.write(`stream-posts: ${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    process.stderr.write(`stream-posts: unexpected internal error (please report it):\n${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = EXIT.failed;
  }
}

await main(process.argv);
