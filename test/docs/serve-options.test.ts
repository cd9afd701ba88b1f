import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVE_OPTIONS, START_SERVER_OPTION_NAMES, type ServeOption } from '../../src/api/serve-options.js';
import { ensureBuilt, runToEnd, ROOT } from '../support/cli.js';

/** The cells of each row of the table under `header` in a page of docs/ (a cell may hold an escaped bar: `text\\|json`). */
function tableRows(page: string, header: string): string[][] {
  const lines = readFileSync(join(ROOT, 'docs', page), 'utf8').split('\n');
  const start = lines.indexOf(header);
  expect(start, `docs/${page} has its table ${header}`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** The rows of docs/serve.md's flag table: each long flag a row names, with the row's default cell. */
function documentedFlags(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const [flags = '', shown = ''] of tableRows('serve.md', '| flag | default | meaning |'))
    for (const [flag] of flags.matchAll(/--[a-z][a-z0-9-]*/g)) rows.set(flag, shown);
  return rows;
}

/** The long flag of a table row: `--quiet` of `-q, --quiet`. */
const longFlag = (flag: string): string => /--[a-z][a-z0-9-]*/.exec(flag)![0];

describe("docs/serve.md's flag table is the option table", () => {
  const documented = documentedFlags();
  const rows = Object.values(SERVE_OPTIONS as Record<string, ServeOption>).filter((option) => option.flag);

  it('names the same flags', () => {
    expect([...documented.keys()].sort()).toEqual(rows.map((option) => longFlag(option.flag!)).sort());
  });

  it('gives each the same default', () => {
    const differing = rows
      .map((option) => ({ flag: longFlag(option.flag!), table: option.shownDefault }))
      .filter(({ flag, table }) => documented.get(flag) !== table)
      .map(({ flag, table }) => `${flag}: docs say ${documented.get(flag)}, the table ${table}`);
    expect(differing).toEqual([]);
  });

  it('is what serve --help offers, flag for flag', async () => {
    ensureBuilt();
    const { code, stdout } = await runToEnd(['serve', '--help']);
    expect(code).toBe(0);
    const offered = [...stdout.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)/gm)].map((match) => match[1]);
    expect(offered.filter((flag) => flag !== '--help').sort()).toEqual(
      rows.map((option) => longFlag(option.flag!)).sort(),
    );
  });

  it('shows numeric defaults as the parsed values they stand for', () => {
    // `16MiB` and `10m` are what --help prints; the value behind them is the table's default.
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, MiB: 1024 * 1024 };
    for (const option of rows) {
      if (typeof option.default !== 'number') continue;
      const [, amount = '', unit = ''] = /^`(\d+)([a-zA-Z]*)`$/.exec(option.shownDefault) ?? [];
      expect(Number(amount) * (unit === '' ? 1 : units[unit]!), option.flag).toBe(option.default);
    }
  });
});

/** The rows of docs/api.md's startServer table: each option's name and its default cell. */
function documentedStartServerOptions(): Map<string, string> {
  const rows = tableRows('api.md', '| option | type | default | meaning |');
  return new Map(rows.map(([name = '', , shown = '']) => [name.replaceAll('`', ''), shown]));
}

describe("docs/api.md's startServer table is the option table", () => {
  const documented = documentedStartServerOptions();

  it('names the options startServer takes, and no other', () => {
    expect([...documented.keys()].sort()).toEqual([...START_SERVER_OPTION_NAMES].sort());
  });

  it('gives each number its default', () => {
    const differing = START_SERVER_OPTION_NAMES.flatMap((name) => {
      const option: ServeOption = SERVE_OPTIONS[name];
      if (typeof option.default !== 'number') return [];
      // The cell leads with the value in code marks (`16777216` (16 MiB)).
      const shown = /^`(\d+)`/.exec(documented.get(name) ?? '')?.[1];
      return Number(shown) === option.default
        ? []
        : [`${name}: docs say ${documented.get(name)}, the table ${option.default}`];
    });
    expect(differing).toEqual([]);
  });
});
