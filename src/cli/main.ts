import { Command, CommanderError, Option } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { DEFAULTS } from '../server/defaults.js';
import { EXIT, ExitError } from './exit.js';
import { parseBytes, parseDuration, parseNonNegativeInteger, parsePort } from './parse.js';

function colorWanted(stream: NodeJS.WriteStream, flag: boolean | undefined): boolean {
  if (flag === false || 'NO_COLOR' in process.env) return false;
  if (process.env['FORCE_COLOR'] !== undefined && process.env['FORCE_COLOR'] !== '0') return true;
  return stream.isTTY === true;
}

function buildProgram(): Command {
  const program = new Command('stream-posts')
    .description('Follow, publish and serve Stream Posts over WebSocket.')
    .version(packageJson.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

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
