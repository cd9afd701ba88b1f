import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_URL, serviceEndpoints, splitUrls, type Endpoint, optionOf } from '../api/internal.js';
import { usageError } from './exit.js';
import type { AlertRuleInput } from '../terminal/alerts.js';
import { readStdinText, readTextFile } from './files.js';
import type { ConfigFile, Profile } from './settings-schema.js';

export type { ConfigFile, Profile };

const DEFAULT_PROFILE = 'default';

export function configPath(env: NodeJS.ProcessEnv): string {
  const base = env['XDG_CONFIG_HOME'] || join(homedir(), '.config');
  return join(base, 'stream-posts', 'config.json');
}

export async function readConfig(path: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw usageError(`cannot read the config file ${path}: ${(error as Error).message}`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw usageError(`the config file ${path} is not valid JSON`, { cause: error });
  }
  // The schema (and its library) loads only when there is a file to check.
  const { configSchema } = await import('./settings-schema.js');
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'the top level';
    throw usageError(`the config file ${path} is not valid at ${where}: ${issue?.message ?? 'unexpected shape'}`);
  }
  return parsed.data;
}

/** Writes atomically and readable by the owner only: the file holds keys. */
export async function writeConfig(path: string, config: ConfigFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

export interface ConnectionFlags {
  url?: string[] | undefined;
  apiKey?: string | undefined;
  apiKeyFile?: string | undefined;
  profile?: string | undefined;
  apiKeyStdin?: boolean | undefined;
}

export interface ConnectionSettings {
  /** The first of `endpoints`: where the first connection goes. */
  endpoint: Endpoint;
  /** Every address given, in order (one unless several were). */
  endpoints: Endpoint[];
  apiKey: string | undefined;
  /** Where the key came from, in the words of the flag or variable (`--api-key-file key.txt`): errors about the key say it. */
  keySource?: string | undefined;
  /** The profile that was applied, if any. */
  profile: string | undefined;
  /** The profile's default stream for `post`. */
  stream?: string | undefined;
  /** The profile's alert rules for `terminal`. */
  alerts?: AlertRuleInput[] | undefined;
  /** The profile's `terminal` section as written (checked by `terminal`). */
  terminal?: unknown;
  /** The config file these came from (`terminal` keeps its session there). */
  configPath?: string | undefined;
}

export const STDIN_KEY_SOURCE = 'standard input (--api-key-stdin)';

/** `--api-key-stdin`: a hidden prompt on a terminal, else all of standard input. */
export async function readKeyFromStdin(): Promise<string> {
  if (process.stdin.isTTY === true && process.stderr.isTTY === true) {
    const { isPromptCancelled, promptForKey } = await import('../render/prompts.js');
    const typed = await promptForKey().catch((error: unknown) => {
      if (isPromptCancelled(error)) throw usageError('cancelled; no key was given');
      throw error;
    });
    return checkedKey(typed, STDIN_KEY_SOURCE);
  }
  return checkedKey(await readStdinText(), STDIN_KEY_SOURCE);
}

/**
 * A key as given, without the whitespace around it (a key file's final
 * newline). Anything else that is not printable ASCII (a second line, a
 * control character) would be refused by HTTP or mangled on the way: it is a
 * usage error naming where the key came from, never showing the key.
 */
export function checkedKey(raw: string, source: string): string {
  const key = raw.trim();
  if (key === '') throw usageError(`the API key from ${source} is empty`);
  if (!/^[\x20-\x7e]+$/.test(key)) {
    throw usageError(
      `the API key from ${source} must be one line of printable characters (ASCII letters, digits, punctuation)`,
    );
  }
  return key;
}

async function readKeyFile(path: string): Promise<string> {
  return checkedKey(await readTextFile(path, '--api-key-file'), `--api-key-file ${path}`);
}

/** The endpoints of `--url` (or STREAM_POSTS_URL, or a profile's URL), their errors worded for the flags. */
export function endpointsFromFlag(urls: string | readonly string[]): Endpoint[] {
  try {
    return serviceEndpoints(typeof urls === 'string' ? splitUrls(urls) : urls, URL_FLAG_WORDS);
  } catch (error) {
    if (optionOf(error) === 'url') throw usageError((error as Error).message, { cause: error });
    throw error;
  }
}

/** How an address's errors say it in flags: the flag, and the key's own ways. */
const URL_FLAG_WORDS = { url: '--url', keyAdvice: 'give the key with --api-key-file or STREAM_POSTS_API_KEY' };

interface KeyChoice {
  key: string | undefined;
  source: string | undefined;
}

async function chooseKey(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
  profile: Profile | undefined,
  profileSource: string,
): Promise<KeyChoice> {
  const fromProfile = (): KeyChoice | undefined =>
    profile?.apiKey === undefined
      ? undefined
      : { key: checkedKey(profile.apiKey, profileSource), source: profileSource };
  const given = [flags.apiKey !== undefined, flags.apiKeyFile !== undefined, flags.apiKeyStdin === true];
  if (given.filter(Boolean).length > 1) {
    throw usageError('give the key once: --api-key, --api-key-file or --api-key-stdin');
  }
  if (flags.apiKey !== undefined) return { key: checkedKey(flags.apiKey, '--api-key'), source: '--api-key' };
  if (flags.apiKeyFile !== undefined) {
    return { key: await readKeyFile(flags.apiKeyFile), source: `--api-key-file ${flags.apiKeyFile}` };
  }
  if (flags.apiKeyStdin === true) return { key: await readKeyFromStdin(), source: STDIN_KEY_SOURCE };
  // `--profile NAME` is a flag: the named profile's key beats the environment's.
  const named = flags.profile !== undefined ? fromProfile() : undefined;
  if (named) return named;
  const envKey = env['STREAM_POSTS_API_KEY'] || undefined;
  if (envKey !== undefined) {
    return { key: checkedKey(envKey, 'STREAM_POSTS_API_KEY'), source: 'STREAM_POSTS_API_KEY' };
  }
  return fromProfile() ?? { key: undefined, source: undefined };
}

/**
 * Flags beat the environment, which beats the profile, which beats the defaults. A profile
 * named by `--profile` is a flag: its URL and key beat the environment's, as asked on the line;
 * one chosen by STREAM_POSTS_PROFILE, or the `default` profile, comes after the environment.
 */
export async function resolveSettings(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Promise<ConnectionSettings> {
  const path = configPath(env);
  const named = flags.profile ?? (env['STREAM_POSTS_PROFILE'] || undefined);
  const config = await readConfig(path);
  const profileName = named ?? (DEFAULT_PROFILE in config.profiles ? DEFAULT_PROFILE : undefined);
  const profile: Profile | undefined = profileName !== undefined ? config.profiles[profileName] : undefined;
  if (named !== undefined && !profile) {
    const known = Object.keys(config.profiles);
    throw usageError(
      `no profile named "${named}" in ${path}${known.length > 0 ? ` (profiles: ${known.join(', ')})` : ''}; add one with: stream-posts config set ${named} --url URL --api-key-file FILE`,
    );
  }
  const fromEnv = env['STREAM_POSTS_URL'] || undefined;
  const namedUrl = flags.profile !== undefined ? profile?.url : undefined;
  const url = flags.url ?? namedUrl ?? fromEnv ?? profile?.url ?? DEFAULT_URL;
  const { key, source } = await chooseKey(flags, env, profile, `profile "${profileName}" in ${path}`);
  const endpoints = endpointsFromFlag(url);
  return {
    endpoint: endpoints[0]!,
    endpoints,
    apiKey: key,
    keySource: source,
    profile: profileName,
    stream: profile?.stream,
    alerts: profile?.alerts,
    terminal: profile?.terminal,
    configPath: path,
  };
}
