import { InvalidArgumentError, type Command } from 'commander';
import type { ConnectionSettings } from '../client/config.js';
import { ClientError } from '../client/errors.js';
import { EXIT, ExitError } from './exit.js';

/** Whether to colour a stream: flags and NO_COLOR/FORCE_COLOR first, then whether it is a terminal. */
export function colorWanted(stream: NodeJS.WriteStream, flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (flag === false || 'NO_COLOR' in env) return false;
  if (env['FORCE_COLOR'] !== undefined) return env['FORCE_COLOR'] !== '0' && env['FORCE_COLOR'] !== 'false';
  return stream.isTTY === true;
}

/** The options every client command takes (`listen`, `tree`, `post`, `config` does not). */
export function addClientOptions(command: Command): Command {
  return command
    .option('--url <url>', 'service base URL, ws(s)://host[:port] with or without /v1/ws (env STREAM_POSTS_URL; default ws://127.0.0.1:8787, a local serve)')
    .option('--api-key <key>', 'API key (visible in `ps`: prefer --api-key-file or STREAM_POSTS_API_KEY)')
    .option('--api-key-file <file>', 'read the API key from this file')
    .option('--profile <name>', 'use a profile from the config file (see `stream-posts config`; env STREAM_POSTS_PROFILE)')
    .option('--auth-query', 'send the key as ?apiKey= in the URL instead of the x-api-key header')
    .option('--json', 'machine output: one JSON object per line on stdout')
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .option('-q, --quiet', 'no status lines on stderr; errors only')
    .option('-v, --verbose', 'more status detail on stderr');
}

export interface CommonOptions {
  settings: ConnectionSettings;
  authQuery: boolean;
  json: boolean;
  /** Colour on stdout. */
  color: boolean;
  /** Colour and spinners on stderr. */
  stderrColor: boolean;
  quiet: boolean;
  verbose: boolean;
}

export async function commonOptions(options: Record<string, unknown>): Promise<CommonOptions> {
  // Loaded here, not at start-up: it brings the validation library, which `--help` does not need.
  const { resolveSettings } = await import('../client/config.js');
  const settings = await resolveSettings(
    {
      url: options['url'] as string | undefined,
      apiKey: options['apiKey'] as string | undefined,
      apiKeyFile: options['apiKeyFile'] as string | undefined,
      profile: options['profile'] as string | undefined,
    },
    process.env,
  );
  return { settings, authQuery: options['authQuery'] === true, ...outputOptions(options) };
}

export type OutputOptions = Omit<CommonOptions, 'settings' | 'authQuery'>;

/** `--json`, `--no-color`, `--quiet`, `--verbose` and the environment, for every command that prints. */
export function outputOptions(options: Record<string, unknown>): OutputOptions {
  const json = options['json'] === true;
  const colorFlag = options['color'] as boolean | undefined;
  return {
    json,
    color: !json && colorWanted(process.stdout, colorFlag),
    stderrColor: colorWanted(process.stderr, colorFlag),
    quiet: options['quiet'] === true,
    verbose: options['verbose'] === true,
  };
}

export function exitCodeFor(error: ClientError): number {
  switch (error.kind) {
    case 'usage':
      return EXIT.usage;
    case 'refused':
      return EXIT.failed;
    case 'unreachable':
    case 'unauthorized':
      return EXIT.unreachable;
  }
}

export function requireKey(settings: ConnectionSettings): string {
  if (settings.apiKey === undefined) {
    throw new ExitError(EXIT.usage, 'no API key: give --api-key-file FILE, set STREAM_POSTS_API_KEY, or use --profile NAME');
  }
  return settings.apiKey;
}

export function positiveInteger(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) throw new InvalidArgumentError(`expected a positive integer, got "${text}"`);
  return Number(text);
}

export function regex(text: string): RegExp {
  try {
    return new RegExp(text, 'giu');
  } catch (error) {
    throw new InvalidArgumentError(`not a valid regular expression: ${(error as Error).message}`);
  }
}

