import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliCommandLine, ensureBuilt, finish, runToEnd, shell } from '../support/cli.js';
import { KEYS } from '../support/harness.js';
import { startServe } from '../support/serve.js';

let tmp: string;
let scripts: Record<'bash' | 'zsh' | 'fish', string>;
beforeAll(async () => {
  ensureBuilt();
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-completion-'));
  // `stream-posts` on PATH, as an installed CLI is: the bash script runs it for stream ids.
  await symlink(BIN, join(tmp, 'stream-posts'));
  const results = await Promise.all((['bash', 'zsh', 'fish'] as const).map((name) => runToEnd(['completion', name])));
  for (const result of results) {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
  }
  scripts = { bash: results[0]!.stdout, zsh: results[1]!.stdout, fish: results[2]!.stdout };
  for (const [name, text] of Object.entries(scripts)) await writeFile(join(tmp, `completion.${name}`), text);
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const installed = (name: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`]);
    return true;
  } catch {
    return false;
  }
};

/**
 * Why a shell's test cannot run here, or undefined when it can. In CI (`CI` set), where
 * .ci/run installs zsh and fish, a missing shell fails its test instead of skipping it.
 */
function missingShell(name: string): string | undefined {
  if (installed(name) || process.env['CI']) return undefined;
  const reason = `${name} is not installed (apt-get install ${name}; .ci/run installs it)`;
  console.warn(`completion test skipped: ${reason}`);
  return reason;
}
const noZsh = missingShell('zsh');
const noFish = missingShell('fish');
const skipped = (title: string, reason: string | undefined) => (reason ? `${title} (skipped: ${reason})` : title);

/** What bash completes for the words, the last being the one under the cursor. */
async function complete(words: string[], env: Record<string, string> = {}): Promise<string[]> {
  const script = [
    `source ${join(tmp, 'completion.bash')}`,
    `COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    'COMP_LINE="${COMP_WORDS[*]}"',
    'COMP_POINT=${#COMP_LINE}',
    'COMPREPLY=()',
    '"$(complete -p stream-posts | sed -E "s/.*-F ([^ ]+).*/\\1/")" stream-posts "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const result = await finish(
    shell(script, { env: { PATH: `${tmp}:${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`, ...env } }),
  );
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.split('\n').filter((line) => line !== '');
}

describe('stream-posts completion', () => {
  it('bash accepts the script and registers it for stream-posts', async () => {
    const result = await finish(
      shell(`source <(${cliCommandLine(['completion', 'bash'])}) && complete -p stream-posts`),
    );
    expect(result).toMatchObject({ code: 0, stderr: '', stdout: 'complete -F _stream_posts stream-posts\n' });
  });

  it('bash completes commands, subcommands, flags of the command on the line, flag values and arguments', async () => {
    const [commands, all, flags, afterValue, choices, shells, config, help] = await Promise.all([
      complete(['stream-posts', 'st']),
      complete(['stream-posts', '']),
      complete(['stream-posts', 'listen', '--la']),
      complete(['stream-posts', 'history', '--limit', '5', '--st']),
      complete(['stream-posts', 'post', '--content-type', '']),
      complete(['stream-posts', 'completion', 'f']),
      complete(['stream-posts', 'config', 're']),
      complete(['stream-posts', 'help', 'hi']),
    ]);
    expect(commands).toEqual(['streams']);
    expect(all).toEqual([
      'serve',
      'listen',
      'tree',
      'terminal',
      'post',
      'demo',
      'config',
      'streams',
      'history',
      'targets',
      'faults',
      'scenario',
      'doctor',
      'completion',
      'help',
    ]);
    expect(flags).toEqual(['--last']);
    expect(afterValue).toEqual(['--streams']);
    expect(choices).toEqual(['rawtext', 'markdown']);
    expect(shells).toEqual(['fish']);
    expect(config).toEqual(['remove']);
    expect(help).toEqual(['history']);
    // Values of flags with choices are completed; a number is not guessed.
    expect(await complete(['stream-posts', 'serve', '--log-format', 'j'])).toEqual(['json']);
    expect(await complete(['stream-posts', 'serve', '--port', ''])).toEqual([]);
  });

  it('bash completes stream ids from the service and key of the environment, after a comma too', async () => {
    const serve = await startServe();
    const env = { STREAM_POSTS_URL: serve.url, STREAM_POSTS_API_KEY: KEYS.bob };
    const [first, afterComma, single, noService] = await Promise.all([
      complete(['stream-posts', 'listen', '--streams', ''], env),
      complete(['stream-posts', 'tree', '--streams', 'macro-wire,w'], env),
      complete(['stream-posts', 'post', '--stream', 'ma'], env),
      complete(['stream-posts', 'listen', '--streams', ''], { STREAM_POSTS_URL: 'ws://127.0.0.1:1' }),
    ]);
    expect(first).toEqual(['macro-wire', 'whale-alerts']);
    expect(afterComma).toEqual(['macro-wire,whale-alerts']);
    expect(single).toEqual(['macro-wire']);
    // No service, no key: nothing to offer, and nothing printed.
    expect(noService).toEqual([]);
  });

  it.skipIf(noZsh !== undefined)(skipped('zsh accepts the script', noZsh), async () => {
    const result = await finish(
      shell(`zsh -c 'autoload -U compinit && compinit -u && source ${join(tmp, 'completion.zsh')}'`),
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
  });

  it.skipIf(noFish !== undefined)(skipped('fish accepts the script', noFish), async () => {
    const result = await finish(
      shell(`fish -c 'source ${join(tmp, 'completion.fish')}; complete -C "stream-posts lis"'`),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^listen\t/m);
  });

  it('the zsh script is the bash one under bashcompinit; the fish one has a line per command', () => {
    expect(scripts.zsh).toMatch(/^#compdef stream-posts\n/);
    expect(scripts.zsh).toContain('autoload -U +X bashcompinit && bashcompinit\n');
    expect(scripts.zsh).toContain('complete -F _stream_posts stream-posts\n');
    expect(scripts.fish).toContain(
      "complete -c stream-posts -n '__stream_posts_at \\'\\'' -a 'listen' -d 'follow streams: print posts as they arrive (on-stream-post)'",
    );
    expect(scripts.fish).toContain(
      "complete -c stream-posts -n '__stream_posts_at \\'listen\\'' -l streams -x -a '(__stream_posts_stream_ids)'",
    );
  });

  it('an unknown shell is a usage error naming the ones there are', async () => {
    const result = await runToEnd(['completion', 'tcsh']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^stream-posts: command-argument value 'tcsh' is invalid for argument 'shell'\. Allowed choices are bash, zsh, fish\./,
    );
  });
});
