import { Option, type Command } from '@commander-js/extra-typings';
import { ClientError, describeNetworkError } from '../../client/errors.js';
import { FAULT_TYPES, type Fault } from '../../protocol/admin.js';
import { safeLine } from '../../render/text.js';
import { EXIT, usageError } from '../exit.js';
import { parseDuration, parseNonNegativeInteger } from '../parse.js';

/** Where a local `serve` answers admin requests. */
const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8787/_admin';
const DEFAULT_TIMEOUT_MS = 10_000;

export interface FaultsOptions {
  adminUrl?: string | undefined;
  adminToken?: string | undefined;
  timeout?: number | undefined;
  json?: boolean | undefined;
  trace?: boolean | undefined;
}

/** Flags that build a fault without writing JSON. */
export interface FaultFlags {
  code?: string | undefined;
  reason?: string | undefined;
  status?: number | undefined;
  count?: number | undefined;
  delay?: number | undefined;
  jitter?: number | undefined;
  duration?: number | undefined;
  message?: string | undefined;
  frame?: string | undefined;
  user?: string | undefined;
  stream?: string | undefined;
  connection?: string | undefined;
}

/**
 * The admin base from `--admin-url`: the admin URL itself, or the service's address in any
 * form `--url` takes (`ws://host:port`, `…/v1/ws`, `http://host:port`).
 */
export function adminBaseOf(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`--admin-url must be a URL such as ${DEFAULT_ADMIN_URL}, got "${safeLine(text)}"`);
  }
  const protocols: Record<string, string> = { 'ws:': 'http:', 'wss:': 'https:', 'http:': 'http:', 'https:': 'https:' };
  const protocol = protocols[url.protocol];
  if (protocol === undefined || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
    throw usageError(
      `--admin-url must be an http(s):// or ws(s):// URL without credentials or query, got "${safeLine(text)}"`,
    );
  const path = url.pathname.replace(/\/+$/, '').replace(/\/(v1\/ws|_admin)$/, '');
  return `${protocol}//${url.host}${path}/_admin`;
}

/** The flag without which a fault of that type is refused by the service: said before anything is sent. */
const NEEDED_FLAGS: Partial<Record<string, { flag: keyof FaultFlags; example: string }>> = {
  'delay-deliveries': { flag: 'delay', example: '<duration> (e.g. --delay 500ms)' },
  'send-frame': { flag: 'frame', example: '<text> (e.g. --frame \'{"event":"surprise"}\')' },
};

/** A fault from `faults add`'s argument: a JSON object, or a type name completed by the flags. */
export function faultFrom(argument: string, flags: FaultFlags): Record<string, unknown> {
  const given = Object.entries(flags).filter(([, value]) => value !== undefined);
  if (argument.trimStart().startsWith('{')) {
    if (given.length > 0)
      throw usageError(`give the fault as JSON or as a type with flags, not both (--${given[0]![0]} with JSON)`);
    try {
      return JSON.parse(argument) as Record<string, unknown>;
    } catch {
      throw usageError('the fault is not valid JSON: give an object such as \'{"type":"close","code":1012}\'');
    }
  }
  if (!(FAULT_TYPES as readonly string[]).includes(argument))
    throw usageError(`unknown fault "${safeLine(argument)}": one of ${FAULT_TYPES.join(', ')}, or a JSON object`);
  const needed = NEEDED_FLAGS[argument];
  if (needed !== undefined && flags[needed.flag] === undefined)
    throw usageError(`a ${argument} fault needs --${needed.flag} ${needed.example}`);
  const fault: Record<string, unknown> = { type: argument };
  const scope: Record<string, string> = {};
  for (const name of ['user', 'stream', 'connection'] as const)
    if (flags[name] !== undefined) scope[name] = flags[name];
  if (Object.keys(scope).length > 0) fault['scope'] = scope;
  // --code is a close code on `close`, an error code on `fail-publishes`.
  if (flags.code !== undefined) {
    if (argument === 'close') {
      if (!/^\d+$/.test(flags.code))
        throw usageError(`--code on a close fault is a close code such as 1012, got "${safeLine(flags.code)}"`);
      fault['code'] = Number(flags.code);
    } else fault['code'] = flags.code;
  }
  const renamed = { delay: 'delayMs', jitter: 'jitterMs', duration: 'durationMs' } as const;
  for (const name of ['reason', 'status', 'count', 'message', 'frame', 'delay', 'jitter', 'duration'] as const) {
    const value = flags[name];
    if (value !== undefined) fault[name in renamed ? renamed[name as keyof typeof renamed] : name] = value;
  }
  return fault;
}

/** One request to the admin endpoints; a refusal is a ClientError worded for the flags. */
async function adminRequest(options: FaultsOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  const base = adminBaseOf(options.adminUrl ?? DEFAULT_ADMIN_URL);
  const url = `${base}${path}`;
  const headers: Record<string, string> = {};
  if (options.adminToken !== undefined) headers['authorization'] = `Bearer ${options.adminToken}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (options.trace === true) (await import('../trace.js')).startTrace([options.adminToken]);
  let response: Response;
  let payload: { error?: { code?: unknown; message?: unknown } } | undefined;
  try {
    response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    payload = (await response.json().catch(() => undefined)) as typeof payload;
  } catch (error) {
    if ((error as Error).name === 'TimeoutError')
      throw new ClientError('timeout', `no answer from ${url} within ${timeoutMs} ms (--timeout)`);
    const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
    throw new ClientError('unreachable', `cannot reach ${url}: ${describeNetworkError(cause)} (--admin-url)`);
  }
  if (response.ok) return payload;
  const error = payload?.error ?? {};
  const said = typeof error.message === 'string' ? error.message : `HTTP ${response.status}`;
  if (response.status === 401)
    throw new ClientError(
      'unauthorized',
      `${url} needs the admin token: --admin-token or STREAM_POSTS_ADMIN_TOKEN (${said})`,
      'unauthorized',
    );
  if (response.status === 404 && error.code !== 'not-found')
    throw new ClientError('unreachable', `no admin endpoints at ${base} (is serve's admin on? --admin-url)`);
  const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
  throw new ClientError('refused', `${code}: ${said}`, code);
}

function describeFault(fault: Fault): string {
  const { id, type, createdAt: _createdAt, scope, ...rest } = fault;
  const fields = Object.entries(rest).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  const where = scope ? Object.entries(scope).map(([name, value]) => `${name}=${value}`) : ['all connections'];
  return safeLine(`${id} ${type} ${[...fields, ...where].join(' ')}`);
}

export async function faultsAdd(argument: string, flags: FaultFlags, options: FaultsOptions): Promise<number> {
  const { fault } = (await adminRequest(options, 'POST', '/faults', faultFrom(argument, flags))) as { fault: Fault };
  process.stdout.write(options.json ? `${JSON.stringify(fault)}\n` : `${describeFault(fault)}\n`);
  return EXIT.ok;
}

export async function faultsList(options: FaultsOptions): Promise<number> {
  const { faults } = (await adminRequest(options, 'GET', '/faults')) as { faults: Fault[] };
  for (const fault of faults)
    process.stdout.write(options.json ? `${JSON.stringify(fault)}\n` : `${describeFault(fault)}\n`);
  if (faults.length === 0 && !options.json) process.stderr.write('no faults in force\n');
  return EXIT.ok;
}

export async function faultsClear(id: string | undefined, options: FaultsOptions): Promise<number> {
  const path = id === undefined ? '/faults' : `/faults/${encodeURIComponent(id)}`;
  const { cleared } = (await adminRequest(options, 'DELETE', path)) as { cleared: number };
  process.stderr.write(`cleared ${cleared} fault${cleared === 1 ? '' : 's'}\n`);
  return EXIT.ok;
}

export async function faultsConnections(options: FaultsOptions): Promise<number> {
  const { connections } = (await adminRequest(options, 'GET', '/connections')) as {
    connections: { id: string; user: string | null; stream: string | null; subscriptions: unknown[] }[];
  };
  for (const connection of connections) {
    const line = options.json
      ? JSON.stringify(connection)
      : safeLine(
          `${connection.id}  ${connection.user ?? '(not yet authenticated)'}${connection.stream ? ` stream=${connection.stream}` : ''}  ${connection.subscriptions.length} subscription(s)`,
        );
    process.stdout.write(`${line}\n`);
  }
  return EXIT.ok;
}

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
export function addFaultsCommand(program: Command, setExitCode: (code: number) => void): void {
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
    setExitCode(await faultsAdd(argument, flags, settle({ adminUrl, adminToken, timeout, json, trace, url }, command)));
  });
  withAdminOptions(faults.command('list').description('list the faults in force')).action(async (options, command) =>
    setExitCode(await faultsList(settle(options as Given, command))),
  );
  withAdminOptions(faults.command('clear [id]').description('clear one fault, or all of them')).action(
    async (id, options, command) => setExitCode(await faultsClear(id, settle(options as Given, command))),
  );
  withAdminOptions(
    faults.command('connections').description('list the open connections (ids for --connection)'),
  ).action(async (options, command) => setExitCode(await faultsConnections(settle(options as Given, command))));
}
