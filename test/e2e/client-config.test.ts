import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deadUrl as nowhere } from '../support/ports.js';
import { existsSync } from 'node:fs';
import { expectCleanError, jsonLines, waitForScreen } from '../support/cli-output.js';
import { inTerminal, SCRIPT, type Finished } from '../support/cli.js';
import { runInProcess } from '../support/in-process.js';
import { KEYS } from '../support/harness.js';
import { cliFixture } from '../support/serve.js';

let home: string;
let deadUrl: string;

const fixture = cliFixture('config');
beforeAll(async () => {
  deadUrl = await nowhere();
});

let counter = 0;
beforeEach(() => {
  counter += 1;
  home = join(fixture.tmp, `xdg-${counter}`);
});

/** A command with its own config directory and the given extra environment. */
function run(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<Finished> {
  return runInProcess(args, { env: { XDG_CONFIG_HOME: home, ...env }, ...(stdin === undefined ? {} : { stdin }) });
}

async function setProfile(name: string, url: string, key: string): Promise<void> {
  const result = await run(['config', 'set', name, '--url', url, '--api-key-stdin'], {}, `${key}\n`);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout + result.stderr).not.toContain(key);
}

/**
 * Who the command connected as, told apart by what each user sees of
 * whale-alerts' history: bob selected SOL, alice BTC and ETH, the newsdesk owns it.
 */
async function whoListens(args: string[], env: Record<string, string> = {}): Promise<string> {
  const result = await run(
    ['listen', '--json', '--streams', 'whale-alerts', '--last', '5', '--idle-timeout', '400ms', ...args],
    env,
  );
  expect(result.code, result.stderr).toBe(0);
  const targets = jsonLines(result.stdout)
    .map((event) => event.data.customTarget)
    .join(',');
  return { SOL: 'bob', BTC: 'alice', 'BTC,SOL': 'newsdesk' }[targets] ?? `unknown (${targets})`;
}

describe('config', () => {
  it('a profile may name several URLs: set saves them in order, list shows them, and a dead first one is passed over', async () => {
    const set = await run(
      ['config', 'set', 'multi', '--url', deadUrl, '--url', fixture.serve.url, '--api-key-stdin'],
      {},
      `${KEYS.bob}\n`,
    );
    expect(set.code, set.stderr).toBe(0);
    const file = join(home, 'stream-posts', 'config.json');
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      profiles: { multi: { url: [deadUrl, fixture.serve.url], apiKey: KEYS.bob } },
    });
    expect(jsonLines((await run(['config', 'list', '--json'])).stdout)).toEqual([
      { name: 'multi', url: [deadUrl, fixture.serve.url], key: true, stream: null },
    ]);
    expect((await run(['config', 'list'])).stdout).toBe(`multi  ${deadUrl},${fixture.serve.url}  key set\n`);
    expect(await whoListens(['--profile', 'multi'])).toBe('bob');
    expect(await whoListens(['--api-key', KEYS.alice], { STREAM_POSTS_URL: `${deadUrl},${fixture.serve.url}` })).toBe(
      'alice',
    );
  });

  it('set reads the key from stdin, list never shows it, path says where, the file is private, a profile connects', async () => {
    await setProfile('work', fixture.serve.url, KEYS.bob);

    const path = await run(['config', 'path']);
    const file = join(home, 'stream-posts', 'config.json');
    expect(path).toMatchObject({ code: 0, stdout: `${file}\n` });
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      profiles: { work: { url: fixture.serve.url, apiKey: KEYS.bob } },
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const [list, listJson] = await Promise.all([run(['config', 'list']), run(['config', 'list', '--json'])]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('work');
    expect(list.stdout).toContain(fixture.serve.url);
    expect(jsonLines(listJson.stdout)).toEqual([{ name: 'work', url: fixture.serve.url, key: true, stream: null }]);
    for (const result of [list, listJson]) expect(result.stdout + result.stderr).not.toContain(KEYS.bob);

    expect(await whoListens(['--profile', 'work'])).toBe('bob');
  });

  it.skipIf(!existsSync(SCRIPT))(
    'set --api-key-stdin on a terminal asks for the key and does not echo it',
    async () => {
      const terminal = inTerminal(['config', 'set', 'typed', '--url', fixture.serve.url, '--api-key-stdin'], {
        XDG_CONFIG_HOME: home,
      });
      await waitForScreen(terminal, 'API key (not shown)');
      terminal.child.stdin!.write(`${KEYS.bob}\r`);
      expect((await terminal.exit()).code, terminal.stdout).toBe(0);
      expect(terminal.stdout).not.toContain(KEYS.bob);
      expect(JSON.parse(await readFile(join(home, 'stream-posts', 'config.json'), 'utf8'))).toEqual({
        profiles: { typed: { url: fixture.serve.url, apiKey: KEYS.bob } },
      });
    },
  );

  it('flags beat the environment, which beats the profile; a profile named by --profile is a flag', async () => {
    await setProfile('work', fixture.serve.url, KEYS.bob);
    await setProfile('default', fixture.serve.url, KEYS.bob);
    const keyFile = join(home, 'newsdesk.key');
    await writeFile(keyFile, `${KEYS.newsdesk}\n`);
    const envAlice = { STREAM_POSTS_API_KEY: KEYS.alice };
    const [profileOnly, namedOverEnv, envOverEnvProfile, envOverDefault, flagOverNamed, keyFileOverNamed, envProfile] =
      await Promise.all([
        whoListens(['--profile', 'work']),
        whoListens(['--profile', 'work'], envAlice),
        whoListens([], { ...envAlice, STREAM_POSTS_PROFILE: 'work' }),
        whoListens([], envAlice),
        whoListens(['--profile', 'work', '--api-key', KEYS.newsdesk], envAlice),
        whoListens(['--profile', 'work', '--api-key-file', keyFile], envAlice),
        whoListens([], { STREAM_POSTS_PROFILE: 'work' }),
      ]);
    expect({
      profileOnly,
      namedOverEnv,
      envOverEnvProfile,
      envOverDefault,
      flagOverNamed,
      keyFileOverNamed,
      envProfile,
    }).toEqual({
      profileOnly: 'bob',
      namedOverEnv: 'bob',
      envOverEnvProfile: 'alice',
      envOverDefault: 'alice',
      flagOverNamed: 'newsdesk',
      keyFileOverNamed: 'newsdesk',
      envProfile: 'bob',
    });
  });

  it('the URL too: flag over environment over profile; a profile named by --profile over the environment', async () => {
    await setProfile('dead', deadUrl, KEYS.bob);
    await setProfile('live', fixture.serve.url, KEYS.bob);
    const [envOverEnvProfile, flagOverNamed, namedOverEnv, envDead] = await Promise.all([
      whoListens([], { STREAM_POSTS_PROFILE: 'dead', STREAM_POSTS_URL: fixture.serve.url }),
      whoListens(['--profile', 'dead', '--url', fixture.serve.url], { STREAM_POSTS_URL: deadUrl }),
      whoListens(['--profile', 'live'], { STREAM_POSTS_URL: deadUrl }),
      run(['listen', '--idle-timeout', '400ms'], { STREAM_POSTS_PROFILE: 'live', STREAM_POSTS_URL: deadUrl }),
    ]);
    expect([envOverEnvProfile, flagOverNamed, namedOverEnv]).toEqual(['bob', 'bob', 'bob']);
    // Without --profile, the environment's URL wins over a working profile's: nothing listens there.
    expect(envDead.code).toBe(3);
    expect(envDead.stderr).toContain(deadUrl.replace(/^ws:/, ''));
    expectCleanError(envDead.stderr);
  });

  it('a profile named default applies when none is chosen; --profile beats STREAM_POSTS_PROFILE', async () => {
    await setProfile('default', fixture.serve.url, KEYS.alice);
    await setProfile('work', fixture.serve.url, KEYS.bob);
    const [implicit, chosen, flagOverEnv] = await Promise.all([
      whoListens([]),
      whoListens(['--profile', 'work']),
      whoListens(['--profile', 'default'], { STREAM_POSTS_PROFILE: 'work' }),
    ]);
    expect({ implicit, chosen, flagOverEnv }).toEqual({ implicit: 'alice', chosen: 'bob', flagOverEnv: 'alice' });
  });

  it('--json: set prints the profile saved (never the key), remove what it removed, path where the file is', async () => {
    const set = await run(
      ['config', 'set', 'desk', '--url', fixture.serve.url, '--stream', 'macro-wire', '--api-key-stdin', '--json'],
      {},
      `${KEYS.macroWire}\n`,
    );
    expect(set.code, set.stderr).toBe(0);
    const path = join(home, 'stream-posts', 'config.json');
    expect(jsonLines(set.stdout)).toEqual([
      { name: 'desk', url: fixture.serve.url, key: true, stream: 'macro-wire', path },
    ]);
    expect(set.stdout + set.stderr).not.toContain(KEYS.macroWire);
    const [where, removed] = [
      await run(['config', 'path', '--json']),
      await run(['config', 'remove', 'desk', '--json']),
    ];
    expect(jsonLines(where.stdout)).toEqual([{ path }]);
    expect(jsonLines(removed.stdout)).toEqual([{ removed: 'desk', path }]);
  });

  it('remove deletes a profile; using a missing one is exit 2 naming it', async () => {
    await setProfile('work', fixture.serve.url, KEYS.bob);
    expect((await run(['config', 'remove', 'work'])).code).toBe(0);
    const [list, use, removeAgain] = await Promise.all([
      run(['config', 'list', '--json']),
      run(['listen', '--profile', 'work']),
      run(['config', 'remove', 'work']),
    ]);
    expect(list.stdout).toBe('');
    expect(use.code).toBe(2);
    expect(use.stderr).toContain('"work"');
    expect(removeAgain.code).toBe(2);
    expectCleanError(use.stderr);
  });

  it('a config file that is not valid is exit 2 naming the file, for every command that reads it', async () => {
    const file = join(home, 'stream-posts', 'config.json');
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, '{"profiles": {"work": ');
    const [listen, list] = await Promise.all([
      run(['listen', '--url', fixture.serve.url, '--api-key', KEYS.bob]),
      run(['config', 'list']),
    ]);
    for (const result of [listen, list]) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(file);
      expectCleanError(result.stderr);
    }
    await writeFile(file, JSON.stringify({ profiles: { work: { url: 42 } } }));
    const wrongShape = await run(['listen', '--profile', 'work']);
    expect(wrongShape.code).toBe(2);
    expect(wrongShape.stderr).toContain('profiles.work.url');
  });

  it('set rejects a bad URL, an empty key and two key sources (exit 2), writing nothing', async () => {
    const [badUrl, emptyKey, twoSources] = await Promise.all([
      run(['config', 'set', 'x', '--url', 'foo://x', '--api-key', KEYS.bob]),
      run(['config', 'set', 'x', '--url', fixture.serve.url, '--api-key-stdin'], {}, '\n'),
      run(
        ['config', 'set', 'x', '--url', fixture.serve.url, '--api-key', KEYS.bob, '--api-key-stdin'],
        {},
        `${KEYS.alice}\n`,
      ),
    ]);
    for (const result of [badUrl, emptyKey, twoSources]) {
      expect(result.code, result.stderr).toBe(2);
      expectCleanError(result.stderr);
    }
    expect((await run(['config', 'list', '--json'])).stdout).toBe('');
  });
});
