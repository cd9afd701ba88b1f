#!/usr/bin/env node
/**
 * Benchmark runner. `node bench/run.mjs` runs every benchmark; `node bench/run.mjs
 * fanout` (or `npm run bench -- fanout`) runs the named ones. `--name=value`
 * flags are passed to the benchmarks (e.g. `fanout --runs=1 --seconds=2` for a quick look).
 *
 * A benchmark is a module in this folder exporting
 *   async function run({ flags, log }) → { name, figures, notes, ...details }
 * where each figure is { figure, value, unit, baseline, baselineValue, ratio, target, met }.
 * To add one, write bench/<name>.mjs and list it in BENCHMARKS below.
 *
 * Prints a table per benchmark and merges the results into bench/results.json,
 * keyed by benchmark name, with the date, Node version, CPU, load average and the
 * share of CPU time the host stole from this (virtual) machine during the run, and the git
 * commit measured (`commit`, a short hash; `dirty` when the worktree had changes). Expects the
 * built CLI (`npm run bench` builds first).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { figureCells } from './lib/format.mjs';
import { REPO_ROOT } from './lib/processes.mjs';

/** Benchmark name → module (relative to this folder), in the order `run.mjs` runs them. */
const BENCHMARKS = {
  fanout: './fanout.mjs',
  startup: './startup.mjs',
  batch: './batch.mjs',
  connections: './connections.mjs',
  latency: './latency.mjs',
  releases: './releases.mjs',
  history: './history.mjs',
  render: './render.mjs',
  flood: './flood.mjs',
  'redis-store': './redis-store.mjs',
  reconnect: './reconnect.mjs',
  graphql: './graphql.mjs',
  'post-exit': './post-exit.mjs',
  terminal: './terminal.mjs',
  'terminal-pinned': './terminal-pinned.mjs',
  replay: './replay.mjs',
  proxy: './proxy.mjs',
  'recording-size': './recording-size.mjs',
};

const RESULTS = join(REPO_ROOT, 'bench', 'results.json');
/** CPU steal (percent of the machine's time) from which a run's timings are flagged. */
const STEAL_WARNING_PERCENT = 5;

function parseArgs(argv) {
  const names = [];
  const flags = {};
  for (const arg of argv) {
    const flag = /^--([\w-]+)(?:=(.*))?$/.exec(arg);
    if (flag) flags[flag[1].replace(/-(\w)/g, (_, c) => c.toUpperCase())] = flag[2] ?? 'true';
    else names.push(arg);
  }
  return { names, flags };
}

function table(result) {
  const rows = [['figure', 'ours', 'baseline', 'ratio', 'target', 'met']];
  for (const f of result.figures) {
    rows.push(figureCells(f, { ratioDigits: 3, missed: 'NO' }));
  }
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** The commit measured: short hash, and whether tracked files (results.json aside) differed from it. */
function gitCommit() {
  try {
    const git = (...args) =>
      execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const changes = git('status', '--porcelain', '--untracked-files=no')
      .split('\n')
      .filter((line) => line && !line.endsWith('bench/results.json'));
    return { hash: git('rev-parse', '--short', 'HEAD'), dirty: changes.length > 0 };
  } catch {
    return undefined;
  }
}

function environment() {
  const cpu = cpus();
  return {
    node: process.version,
    platform: `${platform()} ${release()}`,
    cpu: { model: cpu[0]?.model.trim() ?? 'unknown', cores: cpu.length },
    memoryGiB: Math.round(totalmem() / 2 ** 30),
  };
}

/** Load averages (1, 5, 15 min) rounded; others' work on the machine makes figures noisy. */
function load() {
  return loadavg().map((value) => Math.round(value * 100) / 100);
}

/** Machine-wide CPU tick counters (Linux /proc/stat): all ticks and those stolen by the host. */
function cpuTicks() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
    return { total: fields.reduce((sum, value) => sum + value, 0), steal: fields[7] };
  } catch {
    return undefined;
  }
}

/**
 * Share of this machine's CPU time the hypervisor gave to others (steal) between two
 * readings, in percent; undefined where /proc/stat is missing. On a virtual machine whose
 * host is busy it can reach 50%, and every timing figure of that run means little.
 */
function stealPercent(before, after) {
  if (!before || !after || after.total === before.total) return undefined;
  return Math.round((1000 * (after.steal - before.steal)) / (after.total - before.total)) / 10;
}

async function mergeResults(results) {
  let all = {};
  if (existsSync(RESULTS)) {
    try {
      all = JSON.parse(await readFile(RESULTS, 'utf8'));
    } catch (error) {
      throw new Error(`cannot read ${RESULTS}: ${error.message}`);
    }
  }
  const env = environment();
  for (const { result, date, commit, loadBefore, loadAfter, cpuSteal } of results) {
    all[result.name] = {
      date,
      // The hash as a plain string, so the figures can be tied to the code they measured.
      commit: commit?.hash ?? null,
      dirty: commit?.dirty ?? null,
      ...env,
      loadAverage: { before: loadBefore, after: loadAfter },
      cpuStealPercent: cpuSteal,
      ...result,
    };
  }
  await writeFile(RESULTS, `${JSON.stringify(all, null, 2)}\n`);
}

async function main() {
  const { names, flags } = parseArgs(process.argv.slice(2));
  const unknown = names.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark ${unknown.join(', ')}; available: ${Object.keys(BENCHMARKS).join(', ')}\n`);
    return 2;
  }
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli.js'))) {
    process.stderr.write('dist/cli.js is missing: run `npm run build` first (or `npm run bench`)\n');
    return 2;
  }
  const log = (line) => process.stderr.write(`${line}\n`);
  const results = [];
  // Read before the runs, so a commit made while they run is not taken for the one measured.
  const commit = gitCommit();
  let failed = false;
  for (const name of names.length > 0 ? names : Object.keys(BENCHMARKS)) {
    log(`\n${name}`);
    const started = performance.now();
    const date = new Date().toISOString();
    const loadBefore = load();
    if (loadBefore[0] > cpus().length / 2) {
      log(
        `  note: load average ${loadBefore[0]} on ${cpus().length} cores; other work on this machine makes the figures noisy`,
      );
    }
    const ticksBefore = cpuTicks();
    try {
      const { run } = await import(BENCHMARKS[name]);
      const result = await run({ flags, log });
      const cpuSteal = stealPercent(ticksBefore, cpuTicks());
      results.push({ result, date, commit, loadBefore, loadAfter: load(), cpuSteal });
      log(`  done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      if (cpuSteal !== undefined && cpuSteal >= STEAL_WARNING_PERCENT) {
        log(
          `  note: the host took ${cpuSteal}% of this machine's CPU time during the run (steal); its timings are not representative`,
        );
      }
      process.stdout.write(`\n${name}\n${table(result)}\n`);
      if (result.notes) process.stdout.write(`${result.notes}\n`);
    } catch (error) {
      failed = true;
      log(`  ${name} failed: ${error.stack ?? error.message}`);
    }
  }
  if (results.length > 0) {
    await mergeResults(results);
    log(`\nresults merged into ${RESULTS}`);
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
