#!/usr/bin/env node
/**
 * Writes the README's performance table from bench/results.json, between the lines
 * `<!-- perf-table:start -->` and `<!-- perf-table:end -->`, so the figures in the README
 * are the ones the runs recorded. `--check` changes nothing and exits 1 when the README's
 * table differs from what results.json gives (after a bench run, before a commit).
 *
 * One block per benchmark: a line saying when it ran, at which commit, the 1-minute load
 * average at its start and end and the CPU steal during it, then its figures.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { figureCells } from '../bench/lib/format.mjs';
import { REPO_ROOT } from '../bench/lib/processes.mjs';

const README = join(REPO_ROOT, 'README.md');
const RESULTS = join(REPO_ROOT, 'bench', 'results.json');
const START = '<!-- perf-table:start -->';
const END = '<!-- perf-table:end -->';
/** The order of the blocks; a benchmark results.json holds beyond these follows them. */
const ORDER = ['latency', 'fanout', 'connections', 'history', 'releases', 'batch', 'flood', 'startup', 'render'];

/** Keeps a cell in its table cell: pipes escaped, no line breaks. */
const cell = (text) =>
  String(text)
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');

function conditions(result) {
  const commit = result.commit
    ? `commit ${result.commit.hash}${result.commit.dirty ? ' (with uncommitted changes)' : ''}`
    : 'commit not recorded';
  const before = result.loadAverage?.before?.[0];
  const after = result.loadAverage?.after?.[0];
  const load =
    before === undefined ? undefined : after === undefined || after === before ? `${before}` : `${before} → ${after}`;
  const steal = result.cpuStealPercent;
  return [
    result.date?.slice(0, 10) ?? 'date not recorded',
    commit,
    load === undefined ? undefined : `load average ${load} on ${result.cpu?.cores ?? '?'} cores`,
    steal === undefined || steal === null ? undefined : `steal ${steal}%`,
  ]
    .filter(Boolean)
    .join(', ');
}

function rows(name, result) {
  const lines = [`| **${name}** (${cell(conditions(result))}) | | | | | |`];
  for (const f of result.figures) {
    lines.push(`| ${figureCells(f, { ratioDigits: 2, missed: '**no**' }).map(cell).join(' | ')} |`);
  }
  return lines;
}

function perfTable(results) {
  const names = [
    ...ORDER.filter((name) => name in results),
    ...Object.keys(results).filter((name) => !ORDER.includes(name)),
  ];
  return [
    '| figure | stream-posts | baseline (same run) | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...names.flatMap((name) => rows(name, results[name])),
  ].join('\n');
}

async function main() {
  const check = process.argv.includes('--check');
  const readme = await readFile(README, 'utf8');
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) {
    process.stderr.write(`README.md has no ${START} … ${END} block\n`);
    return 2;
  }
  const table = perfTable(JSON.parse(await readFile(RESULTS, 'utf8')));
  const updated = `${readme.slice(0, start + START.length)}\n${table}\n${readme.slice(end)}`;
  if (updated === readme) return 0;
  if (check) {
    process.stderr.write(
      'README.md: the performance table differs from bench/results.json; run `node scripts/perf-table.mjs`\n',
    );
    return 1;
  }
  await writeFile(README, updated);
  process.stderr.write('README.md: performance table written from bench/results.json\n');
  return 0;
}

process.exitCode = await main();
