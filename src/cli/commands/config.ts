import type { CommandIo } from '../command-io.js';
import { checkedKey, configPath, endpointsFromFlag, readConfig, readKeyFromStdin, writeConfig } from '../settings.js';
import { readTextFile } from '../files.js';
import { EXIT, usageError } from '../exit.js';
import { STREAM_ID_PATTERN } from '../../protocol/limits.js';

export interface ConfigSetOptions {
  /** Several: the instances of one service, tried in turn. */
  url?: string[] | undefined;
  apiKey?: string | undefined;
  apiKeyFile?: string | undefined;
  apiKeyStdin?: boolean | undefined;
  /** The stream `post` publishes to by default. */
  stream?: string | undefined;
  /** The profile saved, as JSON on stdout. */
  json?: boolean | undefined;
}

/** A profile as `config list` and `config set --json` show it: whether it holds a key, never the key. */
function profileRow(name: string, profile: { url?: string | string[]; apiKey?: string; stream?: string }) {
  return { name, url: profile.url ?? null, key: profile.apiKey !== undefined, stream: profile.stream ?? null };
}

async function keyFrom(options: ConfigSetOptions, io: CommandIo): Promise<string | undefined> {
  const sources = [options.apiKey !== undefined, options.apiKeyFile !== undefined, options.apiKeyStdin === true].filter(
    Boolean,
  ).length;
  if (sources > 1) throw usageError('give the key once: --api-key, --api-key-file or --api-key-stdin');
  if (options.apiKeyFile !== undefined)
    return checkedKey(await readTextFile(options.apiKeyFile, '--api-key-file'), `--api-key-file ${options.apiKeyFile}`);
  if (options.apiKeyStdin === true) return readKeyFromStdin(io.streams);
  return options.apiKey !== undefined ? checkedKey(options.apiKey, '--api-key') : undefined;
}

/** `config set NAME`: creates or updates a profile; the key never goes to the screen. */
export async function configSet(name: string, options: ConfigSetOptions, io: CommandIo): Promise<number> {
  if (!/^[\w.-]{1,64}$/.test(name))
    throw usageError(`profile names are 1-64 characters of letters, digits, "_", "." or "-", got "${name}"`);
  const path = configPath(io.env);
  const config = await readConfig(path);
  const key = await keyFrom(options, io);
  if (options.url === undefined && key === undefined && options.stream === undefined)
    throw usageError('nothing to set: give --url, a key (--api-key-file FILE or --api-key-stdin) and/or --stream ID');
  if (options.stream !== undefined && !STREAM_ID_PATTERN.test(options.stream))
    throw usageError(`--stream: a stream id is 1-64 letters, digits, "_" or "-", got "${options.stream}"`);
  // Checked now, so that a profile never holds a URL every command would refuse.
  if (options.url !== undefined) endpointsFromFlag(options.url);
  const profile = { ...config.profiles[name] };
  if (options.url !== undefined) profile.url = options.url.length === 1 ? options.url[0]! : options.url;
  if (key !== undefined) profile.apiKey = key;
  if (options.stream !== undefined) profile.stream = options.stream;
  config.profiles[name] = profile;
  await writeConfig(path, config);
  if (options.json === true) io.streams.stdout.write(`${JSON.stringify({ ...profileRow(name, profile), path })}\n`);
  else io.streams.stderr.write(`profile "${name}" saved in ${path}\n`);
  return EXIT.ok;
}

export async function configList(json: boolean, io: CommandIo): Promise<number> {
  const path = configPath(io.env);
  const config = await readConfig(path);
  const rows = Object.entries(config.profiles).map(([name, profile]) => profileRow(name, profile));
  if (json) {
    for (const row of rows) io.streams.stdout.write(`${JSON.stringify(row)}\n`);
    return EXIT.ok;
  }
  if (rows.length === 0) {
    io.streams.stderr.write(
      `no profiles in ${path}; add one with: stream-posts config set NAME --url URL --api-key-file FILE\n`,
    );
    return EXIT.ok;
  }
  const width = Math.max(...rows.map((row) => row.name.length));
  for (const row of rows) {
    io.streams.stdout.write(
      `${row.name.padEnd(width)}  ${row.url === null ? '(default url)' : [row.url].flat().join(',')}  ${row.key ? 'key set' : 'no key'}${row.stream === null ? '' : `  stream ${row.stream}`}\n`,
    );
  }
  return EXIT.ok;
}

export async function configRemove(name: string, json: boolean, io: CommandIo): Promise<number> {
  const path = configPath(io.env);
  const config = await readConfig(path);
  if (!(name in config.profiles)) throw usageError(`no profile named "${name}" in ${path}`);
  delete config.profiles[name];
  await writeConfig(path, config);
  if (json) io.streams.stdout.write(`${JSON.stringify({ removed: name, path })}\n`);
  else io.streams.stderr.write(`profile "${name}" removed from ${path}\n`);
  return EXIT.ok;
}

export function configShowPath(json: boolean, io: CommandIo): number {
  const path = configPath(io.env);
  io.streams.stdout.write(json ? `${JSON.stringify({ path })}\n` : `${path}\n`);
  return EXIT.ok;
}
