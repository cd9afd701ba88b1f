import { CommanderError } from '@commander-js/extra-typings';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitError } from '../../src/cli/exit.js';
import type { ListenOptions } from '../../src/cli/commands/listen.js';
import type { PostOptions } from '../../src/cli/commands/post.js';
import { buildProgram, type CommandRunners } from '../../src/cli/program.js';
import { testIo } from '../support/in-process.js';
import { numericOptions, type ServeOptions } from '../../src/cli/commands/serve.js';
import { SERVE_OPTIONS, START_SERVER_OPTION_NAMES, type ServeOption } from '../../src/api/serve-options.js';
import type { StreamsOptions } from '../../src/cli/commands/streams.js';
import type { HistoryOptions } from '../../src/cli/commands/history.js';

let configHome: string;
beforeAll(async () => {
  // A config home with no profiles, so the user's own never leak into these tests.
  configHome = await mkdtemp(join(tmpdir(), 'sp-program-'));
});
afterAll(() => rm(configHome, { recursive: true, force: true }));

/** Parses a command line in-process; resolves to what the command function was handed, or rejects like the program would. */
async function parse(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ name: string; options: unknown; errors: string }> {
  let called: { name: string; options: unknown } | undefined;
  const record =
    (name: string) =>
    async (...given: unknown[]) => {
      // The last argument is the context every command gets.
      const values = given.slice(0, -1);
      called = { name, options: values.length === 1 ? values[0] : values };
      return 0;
    };
  const run = Object.fromEntries(
    [
      'serve',
      'listen',
      'post',
      'demo',
      'configSet',
      'configList',
      'configRemove',
      'configShowPath',
      'streams',
      'history',
      'completion',
    ].map((name) => [name, record(name)]),
  ) as unknown as CommandRunners;
  let errors = '';
  const program = buildProgram({
    ...testIo(),
    run,
    env: { XDG_CONFIG_HOME: configHome, ...env },
    setExitCode: () => {},
    output: { writeOut: () => {}, writeErr: (text) => (errors += text) },
  });
  await program.parseAsync(['node', 'stream-posts', ...args]);
  if (!called) throw new Error('no command ran');
  return { ...called, errors };
}

async function usageFailure(args: string[]): Promise<{ error: CommanderError; errors: string }> {
  let errors = '';
  const program = buildProgram({
    ...testIo(),
    setExitCode: () => {},
    output: { writeOut: () => {}, writeErr: (text) => (errors += text) },
  });
  const error = await program.parseAsync(['node', 'stream-posts', ...args]).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CommanderError);
  return { error: error as CommanderError, errors };
}

describe('serve flags', () => {
  it('defaults', async () => {
    const { name, options } = await parse(['serve']);
    expect(name).toBe('serve');
    expect(options).toMatchObject({
      host: '127.0.0.1',
      port: 8787,
      idempotencyWindow: 600_000,
      uploadWindow: 3_600_000,
      rateLimit: 200,
      maxConnectionsPerKey: 16,
      maxSubscriptions: 64,
      maxPendingCommands: 1000,
      maxPendingReleaseBytes: 16 * 1024 * 1024,
      maxBuffered: 8 * 1024 * 1024,
      keepAlive: 30_000,
      bodyTimeout: 10_000,
      headersTimeout: 10_000,
      logFormat: 'text',
      quiet: false,
      color: false,
    } satisfies Partial<ServeOptions>);
    const serve = options as ServeOptions;
    expect(serve.verbose).toBe(false);
    expect(serve.keyRateLimit).toBeUndefined();
    expect(serve.admin).toBeUndefined();
    expect(serve.seed).toBeUndefined();
  });

  it("hands startServer every numeric option of the table under its name, at the table's default", async () => {
    const { options } = await parse(['serve']);
    const expected = Object.fromEntries(
      START_SERVER_OPTION_NAMES.flatMap((name) => {
        const row: ServeOption = SERVE_OPTIONS[name];
        return row.min !== undefined && row.default !== undefined ? [[name, row.default]] : [];
      }),
    );
    expect(Object.keys(expected).length).toBeGreaterThan(10);
    expect(numericOptions(options as ServeOptions)).toEqual(expected);
    const { options: given } = await parse(['serve', '--key-rate-limit', '7', '--max-buffered', '1KiB']);
    expect(numericOptions(given as ServeOptions)).toMatchObject({ keyRateLimit: 7, maxBufferedBytes: 1024 });
  });

  it('values are parsed into their types; lists collect', async () => {
    const { options } = await parse([
      'serve',
      '--port',
      '0',
      '--max-buffered',
      '1MiB',
      '--keep-alive',
      '5s',
      '--max-idempotency-bytes',
      '0',
      '--allowed-hosts',
      'a.example,b.example',
      '--allow-origin',
      'https://x.example',
      '--allow-origin',
      'https://y.example',
      '--no-admin',
      '--log-format',
      'json',
    ]);
    expect(options).toMatchObject({
      port: 0,
      maxBuffered: 1024 * 1024,
      keepAlive: 5000,
      maxIdempotencyBytes: 0,
      allowedHosts: ['a.example', 'b.example'],
      allowOrigin: ['https://x.example', 'https://y.example'],
      admin: false,
      logFormat: 'json',
    } satisfies Partial<ServeOptions>);
  });

  it.each([
    [['serve', '--port', '70000'], '--port'],
    [['serve', '--rate-limit', '-1'], '--rate-limit'],
    [['serve', '--max-pending-commands', '0'], '--max-pending-commands'],
    [['serve', '--keep-alive', 'soon'], '--keep-alive'],
    [['serve', '--log-format', 'xml'], '--log-format'],
  ])('%j is a usage error naming %s', async (args, flag) => {
    const { error, errors } = await usageFailure(args);
    expect(error.exitCode).toBe(1);
    expect(error.code).toMatch(/^commander\.(invalidArgument|optionMissingArgument)$/);
    expect(errors).toContain(flag);
  });
});

describe('listen and tree flags', () => {
  it('defaults: the local serve, no key, 30s timeout, reconnecting', async () => {
    const { name, options } = await parse(['listen']);
    expect(name).toBe('listen');
    const listen = options as ListenOptions;
    expect(listen.command).toBe('on-stream-post');
    expect(listen.settings.endpoint.wsUrl).toBe('ws://127.0.0.1:8787/v1/ws');
    expect(listen.settings.apiKey).toBeUndefined();
    expect(listen).toMatchObject({
      last: 0,
      timeoutMs: 30_000,
      reconnect: true,
      bell: false,
      json: false,
      authQuery: false,
    });
  });

  it('flags beat the environment, the environment beats the default', async () => {
    const env = { STREAM_POSTS_URL: 'ws://env.example:1', STREAM_POSTS_API_KEY: 'sp_env_key_123' };
    const fromEnv = (await parse(['tree'], env)).options as ListenOptions;
    expect(fromEnv.command).toBe('on-stream-post-tree');
    expect(fromEnv.settings.endpoint.wsUrl).toBe('ws://env.example:1/v1/ws');
    expect(fromEnv.settings.apiKey).toBe('sp_env_key_123');
    const fromFlags = (await parse(['tree', '--url', 'wss://flag.example', '--api-key', 'sp_flag_key_123'], env))
      .options as ListenOptions;
    expect(fromFlags.settings.endpoint.wsUrl).toBe('wss://flag.example/v1/ws');
    expect(fromFlags.settings.apiKey).toBe('sp_flag_key_123');
  });

  it('--url repeats and takes commas: every address, in order', async () => {
    for (const command of ['listen', 'tree', 'post']) {
      const { options } = await parse([
        command,
        '--url',
        'ws://a.example:1,ws://b.example:2',
        '--url',
        'ws://c.example:3',
        ...(command === 'post' ? ['text', '--stream', 's'] : []),
      ]);
      const { settings } = options as ListenOptions;
      expect(settings.endpoints.map((endpoint) => endpoint.wsUrl)).toEqual([
        'ws://a.example:1/v1/ws',
        'ws://b.example:2/v1/ws',
        'ws://c.example:3/v1/ws',
      ]);
    }
  });

  it('parses --streams, --last, --count, --idle-timeout, --match, --timeout, --no-reconnect, --json', async () => {
    const { options } = await parse([
      'listen',
      '--streams',
      'a,b',
      '--last',
      '100',
      '--count',
      '3',
      '--idle-timeout',
      '2m',
      '--match',
      'fed',
      '--timeout',
      '300ms',
      '--no-reconnect',
      '--json',
    ]);
    const listen = options as ListenOptions;
    expect(listen).toMatchObject({
      streams: ['a', 'b'],
      last: 100,
      count: 3,
      idleTimeoutMs: 120_000,
      timeoutMs: 300,
      reconnect: false,
      json: true,
      color: false,
    });
    expect(listen.match?.test('FED holds')).toBe(true);
  });

  it.each([
    [['listen', '--last', '101'], '--last'],
    [['listen', '--count', '0'], '--count'],
    [['listen', '--timeout', '30x'], '--timeout'],
    [['listen', '--timeout', '0'], '--timeout'],
    [['listen', '--idle-timeout', 'soon'], '--idle-timeout'],
    [['listen', '--match', '('], '--match'],
  ])('%j is a usage error naming %s', async (args, flag) => {
    const { error, errors } = await usageFailure(args);
    expect(error.code).toBe('commander.invalidArgument');
    expect(errors).toContain(flag);
  });
});

describe('post flags', () => {
  it('defaults and --markdown', async () => {
    const { options } = await parse(['post', 'hello', '--stream', 'macro-wire', '--markdown']);
    expect(options).toMatchObject({
      content: 'hello',
      stream: 'macro-wire',
      contentType: 'markdown',
      via: 'ws',
      window: 64,
      dryRun: false,
      batch: false,
    } satisfies Partial<PostOptions>);
    const plain = (await parse(['post', 'hi', '--via', 'rest', '--batch', '--window', '8'])).options as PostOptions;
    expect(plain).toMatchObject({ contentType: 'rawtext', via: 'rest', batch: true, window: 8 });
  });

  it('--markdown with --content-type rawtext contradicts itself: a usage error before anything runs', async () => {
    await expect(parse(['post', 'x', '--markdown', '--content-type', 'rawtext'])).rejects.toSatisfy(
      (error: unknown) => error instanceof ExitError && error.exitCode === 2 && /contradict/.test(error.message),
    );
  });

  it('--allow-past, and whether a content type was given at all (a prompt then does not ask for it)', async () => {
    const given = (await parse(['post', 'x', '--content-type', 'rawtext', '--allow-past'])).options as PostOptions;
    expect(given).toMatchObject({ contentType: 'rawtext', contentTypeGiven: true, allowPast: true });
    const markdown = (await parse(['post', 'x', '--markdown'])).options as PostOptions;
    expect(markdown).toMatchObject({ contentType: 'markdown', contentTypeGiven: true, allowPast: false });
    const none = (await parse(['post', 'x'])).options as PostOptions;
    expect(none).toMatchObject({ contentType: 'rawtext', contentTypeGiven: false, stream: undefined });
  });

  it('words after the content are a usage error asking to quote it', async () => {
    await expect(parse(['post', 'Fed', 'holds'])).rejects.toSatisfy(
      (error: unknown) => error instanceof ExitError && error.exitCode === 2 && /quote it/.test(error.message),
    );
  });

  it('--via takes ws or rest only', async () => {
    const { errors } = await usageFailure(['post', 'x', '--via', 'smtp']);
    expect(errors).toContain('--via');
  });
});

describe('the key file of a profile-less run', () => {
  it('--api-key-file is read, trimmed', async () => {
    const file = join(configHome, 'key.txt');
    await writeFile(file, 'sp_file_key_123\n');
    const listen = (await parse(['listen', '--api-key-file', file])).options as ListenOptions;
    expect(listen.settings.apiKey).toBe('sp_file_key_123');
  });
});

describe('demo and config', () => {
  it('demo defaults', async () => {
    const { name, options } = await parse(['demo']);
    expect(name).toBe('demo');
    expect(options).toMatchObject({ port: 8787, intervalMs: 1500, view: 'tree', json: false });
  });

  it('config set passes its typed flags', async () => {
    const { name, options } = await parse(['config', 'set', 'work', '--url', 'wss://w.example', '--api-key-stdin']);
    expect(name).toBe('configSet');
    expect(options).toEqual(['work', { url: ['wss://w.example'], apiKeyStdin: true }]);
    const several = await parse([
      'config',
      'set',
      'work',
      '--url',
      'ws://a.example,ws://b.example',
      '--url',
      'ws://c.example',
    ]);
    expect(several.options).toEqual(['work', { url: ['ws://a.example', 'ws://b.example', 'ws://c.example'] }]);
    const stream = await parse(['config', 'set', 'work', '--stream', 'macro-wire']);
    expect(stream.options).toEqual(['work', { stream: 'macro-wire' }]);
  });
});

describe('serve -q and -v', () => {
  it('are accepted, like every other command takes them', async () => {
    expect((await parse(['serve', '-q'])).options).toMatchObject({ quiet: true, verbose: false });
    expect((await parse(['serve', '-v'])).options).toMatchObject({ quiet: false, verbose: true });
    expect((await parse(['serve', '--verbose'])).options).toMatchObject({ verbose: true });
  });
});

describe('streams, history, completion, --exec', () => {
  it('streams takes the client options and --ids', async () => {
    const { name, options } = await parse(['streams', '--ids', '--json', '--url', 'wss://s.example']);
    expect(name).toBe('streams');
    expect(options).toMatchObject({ ids: true, json: true });
    expect((options as StreamsOptions).settings.endpoint.httpBase).toBe('https://s.example');
  });

  it('history: --streams splits, --limit defaults to 10 and takes 1-100', async () => {
    expect((await parse(['history'])).options).toMatchObject({ streams: undefined, limit: 10 });
    expect((await parse(['history', '--streams', 'a, b', '--limit', '100'])).options).toMatchObject({
      streams: ['a', 'b'],
      limit: 100,
    } satisfies Partial<HistoryOptions>);
    for (const bad of ['0', '101', 'x']) {
      const { error, errors } = await usageFailure(['history', '--limit', bad]);
      expect(error.code).toBe('commander.invalidArgument');
      expect(errors).toMatch(/^stream-posts: option '--limit <n>' argument/);
    }
  });

  it('completion takes bash, zsh or fish, and hands over the program', async () => {
    const { name, options } = await parse(['completion', 'zsh']);
    expect(name).toBe('completion');
    const [shell, program] = options as [string, { name(): string }];
    expect(shell).toBe('zsh');
    expect(program.name()).toBe('stream-posts');
    const { errors } = await usageFailure(['completion', 'powershell']);
    expect(errors).toMatch(/Allowed choices are bash, zsh, fish/);
  });

  it('listen and tree take --exec', async () => {
    expect((await parse(['listen', '--exec', 'notify-send hi'])).options).toMatchObject({ exec: 'notify-send hi' });
    expect((await parse(['tree'])).options).toMatchObject({ exec: undefined });
  });
});

describe('errors and help', () => {
  it("every commander error starts with 'stream-posts:'", async () => {
    const { errors } = await usageFailure(['listen', '--bogus']);
    expect(errors).toBe("stream-posts: unknown option '--bogus'\n(run with --help for usage)\n");
  });

  it('help names an unknown command (exit 2), and prints a known one’s help', async () => {
    const { error, errors } = await usageFailure(['help', 'foo']);
    expect(error.code).toBe('commander.unknownCommand');
    expect(error.exitCode).toBe(2);
    expect(errors).toBe("stream-posts: unknown command 'foo'\n(run with --help for usage)\n");
    const config = await usageFailure(['config', 'help', 'bar']);
    expect(config.errors).toMatch(/^stream-posts: unknown command 'bar'/);
    let printed = '';
    const program = buildProgram({
      ...testIo(),
      setExitCode: () => {},
      output: { writeOut: (text) => (printed += text), writeErr: () => {} },
    });
    const helped = await program
      .parseAsync(['node', 'stream-posts', 'help', 'history'])
      .catch((caught: unknown) => caught);
    expect(helped).toMatchObject({ code: 'commander.help', exitCode: 0 });
    expect(printed).toMatch(/^Usage: stream-posts history \[options\]/);
  });
});
