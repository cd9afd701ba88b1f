/**
 * bench/post-exit — how long `post` takes to end once the service has answered: the time
 * from its printed id to its exit, for `post --via rest` (fetch) against `post` over the
 * WebSocket, the baseline. A script that posts in a loop pays it on every post. Whole
 * runs (spawn to exit) are reported too.
 *
 * One `serve` (memory store, no rate limit) on this machine; the two commands run
 * interleaved, one of each per round, after warm-up rounds; medians and p90 over the
 * measured rounds.
 *
 * Flags (through bench/run.mjs): --runs (measured rounds, default 30), --warmup (rounds,
 * default 3).
 */
import { readFlags } from './lib/config.mjs';
import { CLI, startStreamPosts } from './lib/processes.mjs';
import { median, percentile, round } from './lib/stats.mjs';
import { describeFailure, runTimed } from './lib/timed-process.mjs';

const DEFAULTS = { runs: 30, warmup: 3 };

const COMMANDS = [
  { id: 'rest', label: 'post --via rest', via: ['--via', 'rest'] },
  { id: 'ws', label: 'post (WebSocket)', via: [] },
];

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true, zero: ['warmup'] });
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const serve = await startStreamPosts(['--rate-limit', '0']);
  const env = { ...process.env, NO_COLOR: '1', STREAM_POSTS_URL: serve.url };
  env.STREAM_POSTS_API_KEY = 'sp_demo_stream_crypto_legal';
  delete env.FORCE_COLOR;
  const tails = Object.fromEntries(COMMANDS.map((command) => [command.id, []]));
  const walls = Object.fromEntries(COMMANDS.map((command) => [command.id, []]));
  try {
    for (let round_ = 0; round_ < config.warmup + config.runs; round_++) {
      for (const command of COMMANDS) {
        const args = [CLI, 'post', ...command.via, '--stream', 'crypto-legal', `round ${round_}`];
        const result = await runTimed(process.execPath, args, { env, name: command.label, timeoutMs: 30_000 });
        if (result.code !== 0 || result.lastOutputMs === null) {
          throw new Error(`${command.label} failed on round ${round_ + 1}: ${describeFailure(result)}`);
        }
        if (round_ < config.warmup) continue;
        tails[command.id].push(result.wallMs - result.lastOutputMs);
        walls[command.id].push(result.wallMs);
      }
    }
  } finally {
    await serve.stop();
  }

  const stats = {};
  for (const command of COMMANDS) {
    const tail = [...tails[command.id]].sort((a, b) => a - b);
    const wall = [...walls[command.id]].sort((a, b) => a - b);
    stats[command.id] = {
      afterAnswerMedianMs: round(median(tail), 3),
      afterAnswerP90Ms: round(percentile(tail, 90), 3),
      wallMedianMs: round(median(wall), 3),
    };
    const s = stats[command.id];
    log(
      `  ${command.label.padEnd(18)} id → exit: median ${s.afterAnswerMedianMs} ms  p90 ${s.afterAnswerP90Ms} ms;  spawn → exit: median ${s.wallMedianMs} ms`,
    );
  }
  const figure = (name, key) => ({
    figure: name,
    value: stats.rest[key],
    unit: 'ms',
    baseline: 'post (WebSocket)',
    baselineValue: stats.ws[key],
    ratio: round(stats.rest[key] / stats.ws[key], 3),
    target: null,
    met: null,
  });
  return {
    name: 'post-exit',
    figures: [
      figure('post --via rest, id printed → exit, median', 'afterAnswerMedianMs'),
      figure('post --via rest, id printed → exit, p90', 'afterAnswerP90Ms'),
      figure('post --via rest, spawn → exit, median', 'wallMedianMs'),
    ],
    notes:
      `Fresh node processes (${process.version}) against one local serve; the two commands interleaved, ` +
      `${config.runs} measured rounds after ${config.warmup} warm-up rounds; median and p90 (nearest rank).`,
    config,
    stats,
  };
}
