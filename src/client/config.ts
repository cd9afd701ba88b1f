import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_URL, resolveEndpoint, type Endpoint } from './endpoint.js';
import { ClientError } from './errors.js';
import { readTextFile } from './files.js';

/**
 * `$XDG_CONFIG_HOME/stream-posts/config.json` (default `~/.config/…`):
 * `{"profiles": {"NAME": {"url": "wss://…", "apiKey": "…"}}}`.
 * A profile named `default` applies when no other is chosen.
 */
export interface Profile {
  url?: string | undefined;
  apiKey?: string | undefined;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

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
    throw new ClientError('usage', `cannot read the config file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ClientError('usage', `the config file ${path} is not valid JSON`);
  }
  // The schema (and its library) loads only when there is a file to check.
  const { configSchema } = await import('./config-schema.js');
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'the top level';
    throw new ClientError('usage', `the config file ${path} is not valid at ${where}: ${issue?.message ?? 'unexpected shape'}`);
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
  url?: string | undefined;
  apiKey?: string | undefined;
  apiKeyFile?: string | undefined;
  profile?: string | undefined;
}

export interface ConnectionSettings {
  endpoint: Endpoint;
  apiKey: string | undefined;
  /** The profile that was applied, if any. */
  profile: string | undefined;
}

async function readKeyFile(path: string): Promise<string> {
  const key = (await readTextFile(path, '--api-key-file')).trim();
  if (key === '') throw new ClientError('usage', `--api-key-file ${path} is empty`);
  return key;
}

/** Flags beat the environment, which beats the profile, which beats the defaults. */
export async function resolveSettings(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Promise<ConnectionSettings> {
  if (flags.apiKey !== undefined && flags.apiKeyFile !== undefined) {
    throw new ClientError('usage', 'give the key with --api-key or --api-key-file, not both');
  }
  const path = configPath(env);
  const named = flags.profile ?? (env['STREAM_POSTS_PROFILE'] || undefined);
  const config = await readConfig(path);
  const profileName = named ?? (DEFAULT_PROFILE in config.profiles ? DEFAULT_PROFILE : undefined);
  const profile: Profile | undefined = profileName !== undefined ? config.profiles[profileName] : undefined;
  if (named !== undefined && !profile) {
    const known = Object.keys(config.profiles);
    throw new ClientError(
      'usage',
      `no profile named "${named}" in ${path}${known.length > 0 ? ` (profiles: ${known.join(', ')})` : ''}; add one with: stream-posts config set ${named} --url URL --api-key-file FILE`,
    );
  }
  const url = flags.url ?? (env['STREAM_POSTS_URL'] || undefined) ?? profile?.url ?? DEFAULT_URL;
  const apiKey =
    flags.apiKey ??
    (flags.apiKeyFile !== undefined ? await readKeyFile(flags.apiKeyFile) : undefined) ??
    (env['STREAM_POSTS_API_KEY'] || undefined) ??
    profile?.apiKey;
  if (apiKey !== undefined && apiKey.trim() === '') throw new ClientError('usage', 'the API key is empty');
  return { endpoint: resolveEndpoint(url), apiKey: apiKey?.trim(), profile: profileName };
}
