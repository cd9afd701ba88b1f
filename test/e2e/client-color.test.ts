import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ANSI, jsonLines, stripAnsi } from '../support/cli-output.js';
import { ensureBuilt, inTerminal, SCRIPT, type Finished } from '../support/cli.js';
import { runInProcess } from '../support/in-process.js';
import { KEYS, publishToStream } from '../support/harness.js';
import { startServe, type Serve } from '../support/serve.js';

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
      async ([name, args]) => [name, await runInProcess([...args, ...extraFlags], { env })] as const,
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
        runInProcess(
          [command, '--json', '--url', serve.url, '--api-key', KEYS.alice, '--last', '1', '--idle-timeout', '500ms'],
          { env: { NO_COLOR: undefined, FORCE_COLOR: '1' } },
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

describe.skipIf(!existsSync(SCRIPT))('formatting on a terminal', () => {
  const MARKDOWN = '**Rates** held\n\n| coin | price |\n|:--|--:|\n| BTC | 1 |\n| ETH | 1000 |\n\n# Outlook';

  /** A serve whose macro-wire holds `text` (markdown) as its newest post. */
  async function serveWith(text: string): Promise<Serve> {
    const own = await startServe();
    await publishToStream(own.url, 'macro-wire', text, { contentType: 'markdown' });
    return own;
  }

  const view = (command: string, url: string, extra: string[] = []) => [
    command,
    '--url',
    url,
    '--api-key',
    KEYS.alice,
    '--streams',
    'macro-wire',
    '--last',
    '1',
    '--idle-timeout',
    '500ms',
    ...extra,
  ];

  const screenLines = (screen: string) => stripAnsi(screen).split(/\r?\n/);

  it('NO_COLOR=1 takes the colour away, not the formatting: markdown rendered, tables drawn, no escape code', async () => {
    const own = await serveWith(MARKDOWN);
    for (const command of ['listen', 'tree']) {
      const terminal = inTerminal(view(command, own.url), { NO_COLOR: '1', FORCE_COLOR: undefined }, '', true);
      const { code } = await terminal.exit();
      const screen = terminal.stdout;
      expect(code, screen).toBe(0);
      expect(screen, command).not.toMatch(ANSI);
      expect(screen, command).toContain('Rates held');
      expect(screen, command).not.toContain('**');
      expect(screen, command).toContain('│ ETH  │  1000 │');
      expect(screenLines(screen), command).toContain('Outlook');
    }
  });

  it('an empty NO_COLOR= leaves colour on (no-color.org)', async () => {
    const own = await serveWith(MARKDOWN);
    const terminal = inTerminal(view('listen', own.url), { NO_COLOR: '', FORCE_COLOR: undefined }, '', true);
    expect((await terminal.exit()).code, terminal.stdout).toBe(0);
    expect(terminal.stdout).toMatch(/\u001B\[1mRates\u001B\[22m/);
  });

  it('at 70 columns: text and quotes wrap between words, a 7-column table becomes records, nothing is wider', async () => {
    const words =
      'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango';
    const head = ['symbol', 'exchange', 'price', 'change', 'volume', 'market cap', 'updated'];
    const row = ['BTC', 'Binance', '97,000.00', '+2.5%', '1,234,567,890', '1,900,000,000,000', '2026-11-21 12:00'];
    const table = [head, head.map(() => '---'), row].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
    const own = await serveWith(`${words}\n\n> ${words}\n\n${table}`);
    for (const command of ['listen', 'tree']) {
      // Only stdout on the terminal: the spinner's redraws are not lines of the view.
      const terminal = inTerminal(
        view(command, own.url),
        { NO_COLOR: undefined, FORCE_COLOR: undefined },
        ' 2>/dev/null',
        70,
      );
      const { code } = await terminal.exit();
      expect(code, terminal.stdout).toBe(0);
      const lines = screenLines(terminal.stdout);
      for (const line of lines) expect(line.length, `${command}: ${line}`).toBeLessThanOrEqual(70);
      const written = new Set(words.split(' '));
      const prose = lines.filter((line) => /^\s*(alpha|[a-z]+ [a-z]+)/.test(line) && !line.includes(':'));
      expect(prose.length, command).toBeGreaterThanOrEqual(4);
      for (const line of prose)
        for (const word of line.trim().split(/\s+/)) expect(written, `${command}: ${line}`).toContain(word);
      for (const [column, name] of head.entries()) expect(lines, command).toContain(`${name}: ${row[column]}`);
      expect(terminal.stdout, command).not.toContain('┌');
    }
  });
});
