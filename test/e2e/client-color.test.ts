import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANSI,
  client,
  ensureBuilt,
  finish,
  inTerminal,
  jsonLines,
  KEYS,
  SCRIPT,
  startServe,
  type Finished,
  type Serve,
} from './client-support.js';

let serve: Serve;
beforeAll(async () => {
  ensureBuilt();
  serve = await startServe([], 0, 'file');
});

/** The commands whose output is checked: history views (markdown included), a post, a refused post. */
function commands(): Record<string, string[]> {
  const history = ['--url', serve.url, '--api-key', KEYS.alice, '--last', '1', '--idle-timeout', '500ms'];
  return {
    listen: ['listen', '-v', ...history],
    tree: ['tree', '-v', ...history],
    post: [
      'post',
      '-v',
      '--url',
      serve.url,
      '--api-key',
      KEYS.macroWire,
      '--stream',
      'macro-wire',
      '--markdown',
      '**colour** check',
    ],
    refused: ['post', '--url', serve.url, '--api-key', KEYS.macroWire, '--stream', 'crypto-legal', 'refused'],
  };
}

async function runEach(
  env: Record<string, string | undefined>,
  extraFlags: string[] = [],
): Promise<Record<string, Finished>> {
  const entries = await Promise.all(
    Object.entries(commands()).map(
      async ([name, args]) => [name, await finish(client([...args, ...extraFlags], { env }))] as const,
    ),
  );
  return Object.fromEntries(entries);
}

function expectPlain(results: Record<string, Finished>): void {
  for (const [name, { stdout, stderr }] of Object.entries(results)) {
    expect(stdout, `${name} stdout`).not.toMatch(ANSI);
    expect(stderr, `${name} stderr`).not.toMatch(ANSI);
  }
  // The views did print something to be plain about.
  expect(results['listen']!.stdout).toContain('Macro Wire');
  expect(results['tree']!.stdout).toContain('Macro Wire');
  expect(results['post']!.stdout).toMatch(/^[0-9A-Z]{26}\n$/);
  expect(results['refused']!.stderr).toContain('forbidden');
}

describe('colour off the terminal', () => {
  it('no escape codes when nothing is a TTY, with NO_COLOR and FORCE_COLOR unset', async () => {
    expectPlain(await runEach({ NO_COLOR: undefined, FORCE_COLOR: undefined }));
  });

  it('no escape codes with NO_COLOR=1', async () => {
    expectPlain(await runEach({ NO_COLOR: '1', FORCE_COLOR: undefined }));
  });

  it('FORCE_COLOR=1 colours the views (the check above can fail), but not with --no-color or --json', async () => {
    const forced = await runEach({ NO_COLOR: undefined, FORCE_COLOR: '1' });
    expect(forced['listen']!.stdout).toMatch(ANSI);
    expect(forced['tree']!.stdout).toMatch(ANSI);
    expectPlain(await runEach({ NO_COLOR: undefined, FORCE_COLOR: '1' }, ['--no-color']));

    const json = await Promise.all(
      ['listen', 'tree'].map((command) =>
        finish(
          client(
            [command, '--json', '--url', serve.url, '--api-key', KEYS.alice, '--last', '1', '--idle-timeout', '500ms'],
            {
              env: { NO_COLOR: undefined, FORCE_COLOR: '1' },
            },
          ),
        ),
      ),
    );
    for (const { code, stdout } of json) {
      expect(code).toBe(0);
      expect(stdout).not.toMatch(ANSI);
      expect(jsonLines(stdout)).toHaveLength(3);
    }
  });
});

describe.skipIf(!existsSync(SCRIPT))('colour on a terminal', () => {
  const view = (command: string) => [
    command,
    '--url',
    serve.url,
    '--api-key',
    KEYS.alice,
    '--last',
    '1',
    '--idle-timeout',
    '500ms',
  ];

  it('NO_COLOR=1 turns colour off on a TTY; without it the same views are coloured', async () => {
    const runs = await Promise.all(
      [
        { command: 'listen', noColor: '1' },
        { command: 'tree', noColor: '1' },
        { command: 'listen', noColor: undefined },
        { command: 'tree', noColor: undefined },
      ].map(async ({ command, noColor }) => {
        const terminal = inTerminal(view(command), { NO_COLOR: noColor, FORCE_COLOR: undefined });
        const { code } = await terminal.exit();
        return { command, noColor, code, screen: terminal.stdout };
      }),
    );
    for (const run of runs) {
      expect(run.code, run.screen).toBe(0);
      expect(run.screen, run.command).toContain('Macro Wire');
      if (run.noColor) expect(run.screen, `${run.command} with NO_COLOR`).not.toMatch(ANSI);
      else expect(run.screen, `${run.command} on a colour terminal`).toMatch(ANSI);
    }
  });
});
