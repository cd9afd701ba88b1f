// `faults`' subcommands and flags; the requests are faults.ts, loaded only when one runs.
import { Option, type Command } from '@commander-js/extra-typings';
import { FAULT_TYPES } from '../../protocol/admin.js';
import { usageError } from '../exit.js';
import { parseDuration, parseNonNegativeInteger } from '../parse.js';
import type { CommandContext } from '../command-context.js';
import { DEFAULT_ADMIN_URL } from '../parse.js';
import type { FaultFlags, FaultsOptions } from './faults.js';

const run = () => import('./faults.js');

/** The options every `faults` subcommand takes: where the admin endpoints are, the token, output. */
function withAdminOptions<T>(command: T): T {
  const options = [
    new Option('--admin-url <url>', `the admin endpoints, or the service's address (default ${DEFAULT_ADMIN_URL})`).env(
      'STREAM_POSTS_ADMIN_URL',
    ),
    new Option('--url <url>', 'the service address, as the client commands take it (ws://host:port)'),
    new Option('--admin-token <token>', 'when serve has --admin-token; prefer the env variable').env(
      'STREAM_POSTS_ADMIN_TOKEN',
    ),
    new Option('--timeout <duration>', 'the longest wait for the answer (default 10s)').argParser(parseDuration),
    new Option('--json', 'print JSON, one object per line'),
    new Option('--trace', 'print each request and reply on stderr (the token never; times since the start)'),
  ];
  for (const option of options) (command as unknown as Pick<Command, 'addOption'>).addOption(option);
  return command;
}

type Given = FaultsOptions & { url?: string | undefined };

/** `--admin-url` or `--url`; a flag beats STREAM_POSTS_ADMIN_URL (`serve --exec` sets it). */
function settle(given: Given, command: Pick<Command, 'getOptionValueSource'>): FaultsOptions {
  const adminUrlFlag = command.getOptionValueSource('adminUrl') === 'cli';
  if (adminUrlFlag && given.url !== undefined) throw usageError('give --admin-url or --url, not both');
  return { ...given, adminUrl: given.url ?? given.adminUrl };
}

/** `stream-posts faults …`: inject faults into a running `serve` through its admin endpoints. */
export function addFaultsCommand(program: Command, context: CommandContext): void {
  const { setExitCode } = context;
  const faults = program
    .command('faults')
    .description(
      'inject faults into a running serve (its /_admin/faults endpoints): drops, refusals, lost acks, stalls',
    );
  withAdminOptions(
    faults
      .command('add <fault>')
      .description(`inject a fault: a type (${FAULT_TYPES.join(', ')}) with flags, or the fault as JSON`)
      .option(
        '--code <code>',
        'close: the close code (default 1012); fail-publishes: the error code (default unavailable)',
      )
      .option('--reason <text>', 'close: the close reason')
      .option('--status <status>', 'refuse-connections: the HTTP status (default 503)', parseNonNegativeInteger)
      .option(
        '--count <n>',
        'fail-publishes, drop-acks: how many publishes (default: all until cleared)',
        parseNonNegativeInteger,
      )
      .addOption(new Option('--delay <duration>', 'delay-deliveries: the delay').argParser(parseDuration))
      .addOption(new Option('--jitter <duration>', 'delay-deliveries: up to this much more').argParser(parseDuration))
      .addOption(new Option('--duration <duration>', 'clear the fault after this long').argParser(parseDuration))
      .option('--message <text>', 'fail-publishes: the error message')
      .option('--frame <text>', 'send-frame: the text frame to send')
      .option('--user <id>', "only this user's connections")
      .option('--stream <id>', "only connections with this stream's key, and publishes to it")
      .option('--connection <id>', 'only this connection (ids: stream-posts faults connections)'),
  ).action(async (argument, options, command) => {
    const { adminUrl, adminToken, timeout, json, trace, url, ...flags } = options as Given & FaultFlags;
    const given = settle({ adminUrl, adminToken, timeout, json, trace, url }, command);
    setExitCode(await (await run()).faultsAdd(argument, flags, given, context));
  });
  withAdminOptions(faults.command('list').description('list the faults in force')).action(async (options, command) =>
    setExitCode(await (await run()).faultsList(settle(options as Given, command), context)),
  );
  withAdminOptions(faults.command('clear [id]').description('clear one fault, or all of them')).action(
    async (id, options, command) =>
      setExitCode(await (await run()).faultsClear(id, settle(options as Given, command), context)),
  );
  withAdminOptions(
    faults.command('connections').description('list the open connections (ids for --connection)'),
  ).action(async (options, command) =>
    setExitCode(await (await run()).faultsConnections(settle(options as Given, command), context)),
  );
}
