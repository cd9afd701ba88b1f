import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { anchors, links } from './markdown.js';
import { ensureBuilt, runToEnd, ROOT } from '../support/cli.js';

const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
/** Where every flag of every command must be written down. */
const FLAG_PAGES = ['docs/cli.md', 'docs/serve.md'];

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The lines of one section (`Options:`, `Commands:`) of commander's help. */
function section(help: string, title: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf(`${title}:`);
  if (start < 0) return [];
  const end = lines.findIndex((line, index) => index > start && line.trim() === '');
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

async function help(command: string[]): Promise<string> {
  const { code, stdout, stderr } = await runToEnd([...command, '--help']);
  expect(code, `stream-posts ${command.join(' ')} --help: ${stderr}`).toBe(0);
  return stdout;
}

/** Every command and subcommand the built CLI lists, with the long flags its help shows. */
async function commandFlags(command: string[] = []): Promise<{ command: string; flags: string[] }[]> {
  const text = await help(command);
  // A subcommand that takes its parent's flags lists them under `Global Options`.
  const flags = [...section(text, 'Options'), ...section(text, 'Global Options')]
    .map((line) => /^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)/.exec(line)?.[1])
    .filter((flag): flag is string => flag !== undefined && flag !== '--help' && flag !== '--version');
  const subcommands = section(text, 'Commands')
    .map((line) => /^ {2}([a-z][a-z-]*)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== 'help');
  const nested = await Promise.all(subcommands.map((name) => commandFlags([...command, name])));
  return [{ command: ['stream-posts', ...command].join(' '), flags }, ...nested.flat()];
}

describe('every flag is documented', () => {
  let commands: { command: string; flags: string[] }[];
  beforeAll(async () => {
    ensureBuilt();
    commands = await commandFlags();
  });

  it('finds the commands and their flags in --help', () => {
    const names = commands.map(({ command }) => command);
    for (const name of ['listen', 'tree', 'post', 'serve', 'demo', 'streams', 'history', 'faults add', 'config set'])
      expect(names).toContain(`stream-posts ${name}`);
    expect(commands.find(({ command }) => command === 'stream-posts serve')?.flags).toContain('--store');
  });

  it(`in ${FLAG_PAGES.join(' or ')}`, () => {
    const docs = FLAG_PAGES.map(read).join('\n');
    const undocumented = commands.flatMap(({ command, flags }) =>
      flags
        .filter((flag) => !new RegExp(`(?<![\\w-])${flag}(?![\\w-])`).test(docs))
        .map((flag) => `${command} ${flag}`),
    );
    expect(undocumented).toEqual([]);
  });

  it('-q says what docs/cli.md says it does: warnings and errors only, on every client command', async () => {
    expect(read('docs/cli.md')).toContain('(`-q`: warnings and errors only)');
    for (const command of ['listen', 'tree', 'post', 'streams', 'history', 'targets'])
      expect(await help([command])).toMatch(/-q, --quiet +no status lines on stderr: warnings and errors only/);
  });

  it('--json on every command but completion (a shell script), as the README says', () => {
    // A group (config, faults, scenario) only holds its subcommands: no flags of its own.
    const group = ({ command, flags }: { command: string; flags: string[] }) =>
      flags.length === 0 && commands.some((other) => other.command.startsWith(`${command} `));
    const without = commands
      .filter((entry) => !group(entry) && !entry.flags.includes('--json'))
      .map(({ command }) => command);
    expect(without).toEqual(['stream-posts completion']);
    expect(read('README.md')).toContain('`--json` on every command but `completion`');
  });
});

describe('every relative link resolves', () => {
  it.each(PAGES)('%s', (page) => {
    const text = read(page);
    const broken: string[] = [];
    for (const { line, target } of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not this repository's
      const [path = '', anchor] = target.split('#', 2);
      const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
      const where = `${page}:${line} ${target}`;
      if (!existsSync(file)) {
        broken.push(`${where}: no file ${relative(ROOT, file)}`);
      } else if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${where}: no heading #${anchor} in ${relative(ROOT, file)}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
