/**
 * bench/startup — how long a user waits for the CLI to start and finish a
 * trivial command, side by side with wscat (a dev dependency, the tool this CLI
 * replaces for Stream Posts): `stream-posts --help` and
 * `stream-posts post --dry-run --stream crypto-legal "hello"` (prints the
 * command it would send, connects to nothing) against `wscat --help`.
 * Target: each no slower than wscat (ratio of medians <= 1.0).
 *
 * Each command is a fresh `node` process timed from spawn to exit (start-up,
 * module loading, the work, and exit). Commands run interleaved, one of each
 * per round, after warm-up rounds that fill the file cache; figures are the
 * median and p90 over the measured rounds. `node -e 0` runs in the same rounds
 * as the floor every Node CLI pays.
 *
 * A command that fails its probe (e.g. `post --dry-run` before it exists) is
 * reported as not measured (value null, met: no) and the others still run.
 *
 * Flags (through bench/run.mjs): --runs (measured rounds, default 60),
 * --warmup (rounds, default 3).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFlags } from './lib/config.mjs';
import { CLI, REPO_ROOT } from './lib/processes.mjs';
import { median, percentile, round } from './lib/stats.mjs';
import { describeFailure, runTimed } from './lib/timed-process.mjs';

// Start-up times on a shared machine move by ±10 ms from run to run: enough rounds to steady the median.
const DEFAULTS = { runs: 60, warmup: 3 };

const WSCAT = join(REPO_ROOT, 'node_modules', 'wscat', 'bin', 'wscat');

/** What each process sees: no colour, and a key so `post` has all it needs without a config file. */
const ENV = { ...process.env, NO_COLOR: '1', STREAM_POSTS_API_KEY: 'sp_demo_stream_crypto_legal' };
delete ENV.FORCE_COLOR;

const COMMANDS = [
  { id: 'help', label: 'stream-posts --help', args: [CLI, '--help'] },
  {
    id: 'dryRun',
    label: 'stream-posts post --dry-run',
    args: [CLI, 'post', '--dry-run', '--stream', 'crypto-legal', 'hello'],
  },
  { id: 'wscat', label: 'wscat --help', args: [WSCAT, '--help'] },
  { id: 'node', label: 'node -e 0', args: ['-e', '0'], silent: true },
];

function runCommand(command) {
  return runTimed(process.execPath, command.args, { env: ENV, name: command.label, timeoutMs: 30_000 });
}

/** Why a run does not count (it must exit 0, and print on stdout unless silent), or undefined. */
function failure(command, result) {
  if (result.code !== 0) return describeFailure(result);
  if (!command.silent && result.stdout.trim() === '') return 'exited 0 but printed nothing on stdout';
  return undefined;
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true, zero: ['warmup'] });
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  if (!existsSync(WSCAT)) throw new Error(`wscat not found at ${WSCAT}: run npm install (it is a dev dependency)`);

  // A probe per command: one that cannot run is reported, not measured.
  const unavailable = {};
  const samples = {};
  for (const command of COMMANDS) {
    const result = await runCommand(command);
    const why = failure(command, result);
    if (why) {
      unavailable[command.id] = why;
      log(`  ${command.label}: not measured (${why})`);
    } else if (!command.silent) {
      samples[command.id] = result.stdout.slice(0, 400);
    }
  }
  if (unavailable.wscat) throw new Error(`the baseline cannot run: wscat --help ${unavailable.wscat}`);
  const measured = COMMANDS.filter((command) => !(command.id in unavailable));

  const times = Object.fromEntries(measured.map((command) => [command.id, []]));
  for (let round_ = 0; round_ < config.warmup + config.runs; round_++) {
    for (const command of measured) {
      const result = await runCommand(command);
      const why = failure(command, result);
      if (why) throw new Error(`${command.label} failed on round ${round_ + 1}: ${why}`);
      if (round_ >= config.warmup) times[command.id].push(result.wallMs);
    }
  }

  const stats = {};
  for (const command of measured) {
    const sorted = [...times[command.id]].sort((a, b) => a - b);
    stats[command.id] = {
      medianMs: round(median(sorted), 3),
      p90Ms: round(percentile(sorted, 90), 3),
      minMs: round(sorted[0], 3),
    };
    log(
      `  ${command.label.padEnd(28)} median ${stats[command.id].medianMs} ms  p90 ${stats[command.id].p90Ms} ms  min ${stats[command.id].minMs} ms`,
    );
  }

  const wscat = stats.wscat;
  const figure = (name, id, key, withTarget) => {
    const value = stats[id]?.[key] ?? null;
    const ratio = value === null ? null : round(value / wscat[key], 3);
    return {
      figure: name,
      value,
      unit: 'ms',
      baseline: 'wscat --help',
      baselineValue: wscat[key],
      ratio,
      target: withTarget ? 'ratio <= 1.0' : null,
      met: withTarget ? ratio !== null && ratio <= 1.0 : null,
    };
  };
  const figures = [
    figure('start-up, --help, median', 'help', 'medianMs', true),
    figure('start-up, --help, p90', 'help', 'p90Ms', false),
    figure('start-up, post --dry-run, median', 'dryRun', 'medianMs', true),
    figure('start-up, post --dry-run, p90', 'dryRun', 'p90Ms', false),
    figure('start-up, node -e 0 (floor), median', 'node', 'medianMs', false),
  ];
  const notMeasured = Object.entries(unavailable).map(
    ([id, why]) => `${COMMANDS.find((c) => c.id === id).label}: ${why}`,
  );
  return {
    name: 'startup',
    figures,
    notes:
      `Wall-clock ms from spawn to exit of a fresh node process per command (${process.version}); ` +
      `commands interleaved one of each per round, ${config.runs} measured rounds after ${config.warmup} warm-up rounds; median and p90 (nearest rank). ` +
      `Ratio = ours / wscat --help (wscat ${wscatVersion()}).` +
      (notMeasured.length > 0 ? ` NOT MEASURED: ${notMeasured.join('; ')}.` : ''),
    config,
    commands: Object.fromEntries(COMMANDS.map((command) => [command.id, command.label])),
    stats,
    unavailable,
    samples,
    timesMs: Object.fromEntries(Object.entries(times).map(([id, list]) => [id, list.map((ms) => round(ms, 4))])),
  };
}

function wscatVersion() {
  try {
    return JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', 'wscat', 'package.json'), 'utf8')).version;
  } catch {
    return 'unknown version';
  }
}
