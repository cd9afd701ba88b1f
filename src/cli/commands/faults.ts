import { describeNetworkError, redactSecrets } from '../../api/internal.js';
import { FAULT_TYPES, type Fault } from '../../protocol/admin.js';
import { safeLine } from '../../render/text.js';
import { EXIT, ExitError, usageError } from '../exit.js';

import { DEFAULT_ADMIN_URL } from '../parse.js';
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

/** One request to the admin endpoints; a refusal is an ExitError worded for the flags. */
async function adminRequest(options: FaultsOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  const base = adminBaseOf(options.adminUrl ?? DEFAULT_ADMIN_URL);
  const url = `${base}${path}`;
  const headers: Record<string, string> = {};
  if (options.adminToken !== undefined) headers['authorization'] = `Bearer ${options.adminToken}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (options.trace === true) (await import('../trace.js')).startTrace([options.adminToken]);
  // The service's words may echo the token, as written, escaped or split.
  const failure = (exitCode: number, message: string) =>
    new ExitError(exitCode, redactSecrets(message, [options.adminToken]));
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
      throw failure(EXIT.unreachable, `no answer from ${url} within ${timeoutMs} ms (--timeout)`);
    const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
    throw failure(EXIT.unreachable, `cannot reach ${url}: ${describeNetworkError(cause)} (--admin-url)`);
  }
  if (response.ok) return payload;
  const error = payload?.error ?? {};
  const said = typeof error.message === 'string' ? error.message : `HTTP ${response.status}`;
  if (response.status === 401)
    throw failure(
      EXIT.unreachable,
      `${url} needs the admin token: --admin-token or STREAM_POSTS_ADMIN_TOKEN (${said})`,
    );
  if (response.status === 404 && error.code !== 'not-found')
    throw failure(EXIT.unreachable, `no admin endpoints at ${base} (is serve's admin on? --admin-url)`);
  const code = typeof error.code === 'string' ? error.code : `http-${response.status}`;
  throw failure(EXIT.failed, `${code}: ${said}`);
}

function describeFault(fault: Fault): string {
  const { id, type, createdAt: _createdAt, scope, ...rest } = fault;
  const fields = Object.entries(rest).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  const where = scope ? Object.entries(scope).map(([name, value]) => `${name}=${value}`) : ['all connections'];
  return `${id} ${type} ${[...fields, ...where].join(' ')}`;
}

/**
 * One line of `faults`' output (JSON with --json): what the service sent, never the admin
 * token it may echo. The token is cut out before the sanitizer runs, which could otherwise
 * hide it from the scrubber (a character inside it shown as a space).
 */
function print(options: FaultsOptions, line: string): void {
  const redacted = redactSecrets(line, [options.adminToken]);
  process.stdout.write(`${options.json ? redacted : safeLine(redacted)}\n`);
}

export async function faultsAdd(argument: string, flags: FaultFlags, options: FaultsOptions): Promise<number> {
  const { fault } = (await adminRequest(options, 'POST', '/faults', faultFrom(argument, flags))) as { fault: Fault };
  print(options, options.json ? JSON.stringify(fault) : describeFault(fault));
  return EXIT.ok;
}

export async function faultsList(options: FaultsOptions): Promise<number> {
  const { faults } = (await adminRequest(options, 'GET', '/faults')) as { faults: Fault[] };
  for (const fault of faults) print(options, options.json ? JSON.stringify(fault) : describeFault(fault));
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
    print(
      options,
      options.json
        ? JSON.stringify(connection)
        : `${connection.id}  ${connection.user ?? '(not yet authenticated)'}${connection.stream ? ` stream=${connection.stream}` : ''}  ${connection.subscriptions.length} subscription(s)`,
    );
  }
  if (connections.length === 0 && !options.json) process.stderr.write('no open connections\n');
  return EXIT.ok;
}
