#!/usr/bin/env node
/**
 * Writes the performance table of docs/performance.md from bench/results.json, between the
 * lines `<!-- perf-table:start -->` and `<!-- perf-table:end -->`, so the figures there are
 * the ones the runs recorded. `--check` changes nothing and exits 1 when the page's table
 * differs from what results.json gives (after a bench run, before a commit).
 *
 * One block per benchmark: a line saying when it ran, at which commit, the 1-minute load
 * average at its start and end and the CPU steal during it, then its figures.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { figureCells } from '../bench/lib/format.mjs';
import { REPO_ROOT } from '../bench/lib/processes.mjs';

const PAGE = join(REPO_ROOT, 'docs', 'performance.md');
const README = join(REPO_ROOT, 'README.md');
const RESULTS = join(REPO_ROOT, 'bench', 'results.json');
const START = '<!-- perf-table:start -->';
const END = '<!-- perf-table:end -->';
const SUMMARY_START = '<!-- perf-summary:start -->';
const SUMMARY_END = '<!-- perf-summary:end -->';
/**
 * The README's few figures: [what it says, benchmark, figure, baseline, target]. The ratio
 * and whether the target is met come from results.json, as in docs/performance.md.
 */
const SUMMARY = [
  [
    'Redis store fan-out, deliveries/s ÷ memory store',
    'fanout',
    'Redis store: deliveries per second',
    'serve, memory store',
    '≥ 0.9',
  ],
  [
    'Redis store server CPU per delivery ÷ memory store',
    'fanout',
    'Redis store: server CPU per 1,000 deliveries',
    'serve, memory store',
    '≤ 1.2',
  ],
  [
    'two instances on one Redis, deliveries/s ÷ memory store',
    'fanout',
    'Redis store, 2 instances: deliveries per second',
    'serve, memory store',
    '≥ 0.9',
  ],
  [
    'Redis store publish-to-ack p50 ÷ memory store',
    'latency',
    'Redis store: publish-to-ack p50',
    'serve, memory store',
    '≤ 2',
  ],
  [
    'accept CPU per 1,000 connections ÷ bare ws',
    'connections',
    'memory store: server CPU per 1,000 connections',
    'bare ws',
    '≤ 1.2',
  ],
  [
    'memory per idle connection ÷ bare ws',
    'connections',
    'memory store: server memory per connection (RSS)',
    'bare ws',
    '≤ 1.1',
  ],
  ['`post --batch` posts/s ÷ a bare ws client', 'batch', 'posts per second, spawn to exit', 'bare ws client', '≥ 0.8'],
  [
    '`post --dry-run` start-up ÷ `wscat --help`',
    'startup',
    'start-up, post --dry-run, median',
    'wscat --help',
    '≤ 1.0',
  ],
  ['`terminal` key `j` p99 ÷ `less` paging, 200 posts/s arriving', 'terminal', 'key latency, j, p99', 'less, j', '≤ 2'],
  [
    '`terminal` CPU for a 5,000-post burst ÷ `tree`',
    'terminal',
    'burst of 5000: CPU time',
    'tree, the same burst',
    '≤ 1.5',
  ],
  [
    '`terminal` start to first full frame ÷ `tree --last 20`',
    'terminal',
    'start to first full frame, --last 20, median',
    'tree --last 20, first post',
    '≤ 1.5',
  ],
];

function summaryTable(results) {
  const lines = ['| figure | ratio | target | met | measured at |', '|---|---|---|---|---|'];
  for (const [label, bench, name, baseline, target] of SUMMARY) {
    const result = results[bench];
    const found = result?.figures.find((f) => f.figure === name && f.baseline === baseline);
    if (!found || found.ratio === null) {
      lines.push(`| ${label} | not measured | ${target} | — | — |`);
      continue;
    }
    const bound = Number(target.replace(/[^0-9.]/g, ''));
    const met = target.startsWith('≥') ? found.ratio >= bound : found.ratio <= bound;
    const at = result.commit ? `\`${result.commit.slice(0, 7)}\`${result.dirty ? ' (+ changes)' : ''}` : '—';
    lines.push(`| ${label} | ${found.ratio} | ${target} | ${met ? 'yes' : '**no**'} | ${at} |`);
  }
  return lines.join('\n');
}

/** `text` with what lies between `start` and `end` replaced; undefined when the markers are missing. */
function between(text, start, end, content) {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) return undefined;
  return `${text.slice(0, from + start.length)}\n${content}\n${text.slice(to)}`;
}
/** The order of the blocks; a benchmark results.json holds beyond these follows them. */
const ORDER = ['latency', 'fanout', 'connections', 'history', 'releases', 'batch', 'flood', 'startup', 'render'];

/** Keeps a cell in its table cell: pipes escaped, no line breaks. */
const cell = (text) =>
  String(text)
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');

function conditions(result) {
  const commit = result.commit
    ? `commit ${result.commit}${result.dirty ? ' (with uncommitted changes)' : ''}`
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
  const results = JSON.parse(await readFile(RESULTS, 'utf8'));
  const readme = await readFile(README, 'utf8');
  const summarized = between(readme, SUMMARY_START, SUMMARY_END, summaryTable(results));
  if (summarized === undefined) {
    process.stderr.write(`README.md has no ${SUMMARY_START} … ${SUMMARY_END} block\n`);
    return 2;
  }
  if (summarized !== readme) {
    if (check) {
      process.stderr.write(
        'README.md: the figures differ from bench/results.json; run `node scripts/perf-table.mjs`\n',
      );
      return 1;
    }
    await writeFile(README, summarized);
  }
  const page = await readFile(PAGE, 'utf8');
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) {
    process.stderr.write(`docs/performance.md has no ${START} … ${END} block\n`);
    return 2;
  }
  const table = perfTable(results);
  const updated = `${page.slice(0, start + START.length)}\n${table}\n${page.slice(end)}`;
  if (updated === page) return 0;
  if (check) {
    process.stderr.write(
      'docs/performance.md: the performance table differs from bench/results.json; run `node scripts/perf-table.mjs`\n',
    );
    return 1;
  }
  await writeFile(PAGE, updated);
  process.stderr.write('docs/performance.md: performance table written from bench/results.json\n');
  return 0;
}

process.exitCode = await main();
