import { InvalidArgumentError, Option, type Command, type OptionValues } from '@commander-js/extra-typings';
import type { ConnectionSettings } from './settings.js';
import { StreamPostsError } from '../index.js';
import { keyRefusedMessage, DEFAULT_TIMEOUT_MS, formatWait } from '../api/internal.js';
import { EXIT, ExitError } from './exit.js';
import { collectUrls, parseTimeout } from './parse.js';
import type { FrameTrace } from './trace.js';

/** Whether to colour a stream: flags and NO_COLOR/FORCE_COLOR first, then whether it is a terminal. */
export function colorWanted(
  stream: NodeJS.WriteStream,
  flag: boolean | undefined,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  // no-color.org: set and not empty.
  if (flag === false || (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '')) return false;
  if (env['FORCE_COLOR'] !== undefined) return env['FORCE_COLOR'] !== '0' && env['FORCE_COLOR'] !== 'false';
  return stream.isTTY === true;
}

/** The options every client command takes (`listen`, `tree`, `post`, `config` does not). */
export function addClientOptions<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(
  command: Command<Args, Opts, Globals>,
) {
  return command
    .addOption(
      new Option(
        '--url <url>',
        'service base URL, ws(s):// or http(s)://host[:port] with or without /v1/ws; repeat it or separate with commas for several instances, tried in turn (env STREAM_POSTS_URL; default ws://127.0.0.1:8787, a local serve)',
      ).argParser(collectUrls),
    )
    .option('--api-key <key>', 'API key (visible in `ps`: prefer --api-key-file or STREAM_POSTS_API_KEY)')
    .option('--api-key-file <file>', 'read the API key from this file')
    .option('--api-key-stdin', 'read the API key from standard input (typed hidden on a terminal)')
    .option(
      '--profile <name>',
      'use a profile from the config file (see `stream-posts config`; env STREAM_POSTS_PROFILE)',
    )
    .option('--auth-query', 'send the key as ?apiKey= in the URL instead of the x-api-key header')
    .addOption(
      new Option(
        '--timeout <duration>',
        'longest wait for each answer: connecting, connected, sub_ack, each ack, a REST reply; exit 3 when it runs out (300ms, 30s, 2m; a bare number is seconds)',
      )
        .argParser(parseTimeout)
        .default(DEFAULT_TIMEOUT_MS, formatWait(DEFAULT_TIMEOUT_MS)),
    )
    .option('--json', 'machine output: one JSON object per line on stdout')
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .option('-q, --quiet', 'no status lines on stderr: warnings and errors only')
    .option('-v, --verbose', 'more status detail on stderr')
    .option(
      '--trace',
      'print each frame sent and received, and each REST request and reply, on stderr (keys cut out; times since the start)',
    );
}

export interface CommonOptions {
  settings: ConnectionSettings;
  authQuery: boolean;
  /** The longest wait for each answer from the service. */
  timeoutMs: number;
  json: boolean;
  /** Colour on stdout. */
  color: boolean;
  /** Colour and spinners on stderr. */
  stderrColor: boolean;
  quiet: boolean;
  verbose: boolean;
  /** `--trace`: told each WebSocket frame (REST requests are traced through `fetch`). */
  trace?: FrameTrace | undefined;
}

/** What `--json`, `--no-color`, `--quiet` and `--verbose` parse to. */
export interface OutputFlags {
  json?: true | undefined;
  color: boolean;
  quiet?: true | undefined;
  verbose?: true | undefined;
}

/** What the flags of addClientOptions parse to. */
export interface ClientFlags extends OutputFlags {
  url?: string[] | undefined;
  apiKey?: string | undefined;
  apiKeyFile?: string | undefined;
  apiKeyStdin?: true | undefined;
  profile?: string | undefined;
  authQuery?: true | undefined;
  timeout: number;
  trace?: true | undefined;
}

export async function commonOptions(flags: ClientFlags, env: NodeJS.ProcessEnv = process.env): Promise<CommonOptions> {
  // Loaded here, not at start-up: `--help` and `completion` do not need it.
  const { resolveSettings } = await import('./settings.js');
  const { url, apiKey, apiKeyFile, apiKeyStdin, profile } = flags;
  const settings = await resolveSettings({ url, apiKey, apiKeyFile, apiKeyStdin, profile }, env);
  const trace =
    flags.trace === true ? (await import('./trace.js')).startTrace(traceSecrets(settings.apiKey)) : undefined;
  return {
    settings,
    authQuery: flags.authQuery === true,
    timeoutMs: flags.timeout,
    trace,
    ...outputOptions(flags, env),
  };
}

/** What a trace cuts out: the key as it is, and as the ?apiKey= query carries it. */
export function traceSecrets(apiKey: string | undefined): (string | undefined)[] {
  return apiKey === undefined ? [] : [apiKey, encodeURIComponent(apiKey)];
}

export type OutputOptions = Omit<CommonOptions, 'settings' | 'authQuery' | 'timeoutMs' | 'trace'>;

/** `--json`, `--no-color`, `--quiet`, `--verbose` and the environment, for every command that prints. */
export function outputOptions(flags: OutputFlags, env: NodeJS.ProcessEnv = process.env): OutputOptions {
  const json = flags.json === true;
  return {
    json,
    color: !json && colorWanted(process.stdout, flags.color, env),
    stderrColor: colorWanted(process.stderr, flags.color, env),
    quiet: flags.quiet === true,
    verbose: flags.verbose === true,
  };
}

/** A library error's exit code, from its code: cannot connect, authenticate or hear back → 3, a refusal → 1. */
export function exitCodeFor(error: StreamPostsError): number {
  switch (error.code) {
    case 'unreachable':
    case 'closed':
    case 'unauthorized':
    case 'timeout':
      return EXIT.unreachable;
    default:
      return EXIT.failed;
  }
}

export function requireKey(settings: ConnectionSettings): string {
  if (settings.apiKey === undefined) {
    throw new ExitError(
      EXIT.usage,
      'no API key: give --api-key-file FILE or --api-key-stdin, set STREAM_POSTS_API_KEY, or use --profile NAME',
    );
  }
  return settings.apiKey;
}

/**
 * "The service refused the key" says where the key came from (`--api-key-file key.txt`,
 * `STREAM_POSTS_API_KEY`, a profile…), for every client command: the sentence made again
 * from the service's words (`refusal`), or, when it gave none, the source after the message.
 */
export function namingKeySource(error: unknown, settings: Pick<ConnectionSettings, 'keySource'>): unknown {
  if (!(error instanceof StreamPostsError) || error.code !== 'unauthorized' || settings.keySource === undefined)
    return error;
  const key = `the key from ${settings.keySource}`;
  const { refusal, status } = error;
  const message = refusal === undefined ? `${error.message} (${key})` : keyRefusedMessage(refusal, key);
  return new StreamPostsError(error.code, message, { cause: error, status, refusal });
}

/** Runs a client command, its key refusals worded by namingKeySource. */
export async function withKeySource<T>(
  settings: Pick<ConnectionSettings, 'keySource'>,
  command: () => Promise<T>,
): Promise<T> {
  try {
    return await command();
  } catch (error) {
    throw namingKeySource(error, settings);
  }
}

export function positiveInteger(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1)
    throw new InvalidArgumentError(`expected a positive integer, got "${text}"`);
  return Number(text);
}

export function regex(text: string): RegExp {
  try {
    return new RegExp(text, 'giu');
  } catch (error) {
    throw new InvalidArgumentError(`not a valid regular expression: ${(error as Error).message}`);
  }
}
