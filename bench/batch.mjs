/**
 * bench/batch — `stream-posts post --batch` publishing 10,000 posts from
 * NDJSON on stdin to a local `stream-posts serve`, side by side with a bare
 * `ws` client (bench/batch-bare-client.mjs) that sends the same commands with
 * the same window to the same server. Target: at least 80% of the bare
 * client's posts/s.
 *
 * Both sides are a fresh node process timed from spawn to exit (start-up,
 * connecting, publishing every post, writing every result, exiting), fed the
 * same NDJSON (content and idempotency keys, the keys unique per run) and
 * keeping at most `window` posts unacknowledged. Every run checks that each
 * input line got exactly one result, none an error or a duplicate, and that
 * the server stored one post per line (its idempotency map holds exactly
 * `posts` keys).
 *
 * Fairness: one server process for all runs (`--rate-limit 0`, built-in demo
 * seed, stream `crypto-legal`), reset to its seed through `POST /_admin/reset`
 * before every run, so each run meets the same empty store and a server that
 * both sides have warmed up. Runs alternate which side goes first; figures are
 * medians of `runs` runs per side after `warmup` runs each.
 *
 * At the default rate limit: a second `serve` with its default limits (200
 * commands/s per connection, burst 400) takes `limited-posts` posts from
 * `post --batch`, each run timed from spawn to exit, and the median is set
 * against the time the limit allows, (posts − burst) / rate: the burst goes at
 * once, the rest at the rate. Target: at most 1.15 times that. Each run also
 * checks one result per line, none an error, and the stored count.
 *
 * Flags (through bench/run.mjs): --posts (default 10000), --runs (5),
 * --warmup (2), --window (64), --content-bytes (160), --target (0.8),
 * --limited-posts (2000), --limited-runs (3), --limited-target (1.15),
 * --bare-only to check the harness and the baseline alone (no ratio), and
 * --limited-only for the rate-limited runs alone.
 * Fails at once, saying so, when the built CLI has no `post --batch`.
 */
import { join } from 'node:path';
import { readFlags, requireWhole } from './lib/config.mjs';
import { CLI, REPO_ROOT, startStreamPosts } from './lib/processes.mjs';
import { comparison, medianOf, round, sumOf } from './lib/stats.mjs';
import { describeFailure, runTimed } from './lib/timed-process.mjs';

const DEFAULTS = {
  posts: 10_000,
  runs: 5,
  // The server's hot paths need a few thousand posts to be optimized; one run per side is not enough.
  warmup: 2,
  window: 64,
  contentBytes: 160,
  target: 0.8,
  limitedPosts: 2_000,
  limitedRuns: 3,
  limitedTarget: 1.15,
};

/** `serve`'s default per-connection limit (docs/serve.md), which `connected.rateLimit` states. */
const DEFAULT_LIMIT = { perSecond: 200, burst: 400 };

const STREAM_ID = 'crypto-legal';
const STREAM_KEY = 'sp_demo_stream_crypto_legal';
const BARE_CLIENT = join(REPO_ROOT, 'bench', 'batch-bare-client.mjs');

const FILLER =
  ' SEC files motion to dismiss in the exchange case; hearing set for Tuesday. $ETH staking class action ' +
  'certified. Docket: https://example.org/docket ';

function parseConfig(flags = {}) {
  const config = {
    ...readFlags(flags, DEFAULTS, { zero: true }),
    bareOnly: flags.bareOnly === 'true',
    limitedOnly: flags.limitedOnly === 'true',
  };
  requireWhole(config, ['posts', 'runs', 'warmup', 'window', 'contentBytes', 'limitedPosts', 'limitedRuns']);
  for (const name of ['posts', 'runs', 'window', 'limitedRuns']) {
    if (config[name] < 1) throw new RangeError(`--${name} must be at least 1`);
  }
  if (config.contentBytes < 32) throw new RangeError('--content-bytes must be at least 32');
  if (config.limitedPosts <= DEFAULT_LIMIT.burst)
    throw new RangeError(
      `--limited-posts must be more than the burst (${DEFAULT_LIMIT.burst}), or the limit allows it at once`,
    );
  return config;
}

/** The NDJSON both sides read in run `run`: same content, keys unique to the run. */
function input(run, config, posts = config.posts) {
  const lines = [];
  for (let i = 1; i <= posts; i++) {
    const head = `post ${i} $BTC`;
    const content = (head + FILLER.repeat(Math.ceil(config.contentBytes / FILLER.length))).slice(
      0,
      config.contentBytes,
    );
    lines.push(JSON.stringify({ content, contentType: 'rawtext', idempotencyKey: `bench-${run}-${i}` }));
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Checks a side's stdout: one `{"line":N,…}` per input line (N from 1), each
 * with a post and no error. Returns counts and the first few problems.
 */
function checkResults(stdout, posts) {
  const seen = new Uint8Array(posts + 1);
  const problems = [];
  let results = 0;
  let errors = 0;
  let repeated = 0;
  let malformed = 0;
  let duplicates = 0;
  for (const text of stdout.split('\n')) {
    if (text === '') continue;
    let result;
    try {
      result = JSON.parse(text);
    } catch {
      result = undefined;
    }
    if (typeof result?.line !== 'number' || !Number.isInteger(result.line) || result.line < 1 || result.line > posts) {
      malformed += 1;
      if (problems.length < 3) problems.push(`unexpected output line: ${text.slice(0, 200)}`);
      continue;
    }
    results += 1;
    if (seen[result.line]++ > 0) repeated += 1;
    if (result.error !== undefined || typeof result.post?.id !== 'string') {
      errors += 1;
      if (problems.length < 3)
        problems.push(`line ${result.line}: ${JSON.stringify(result.error ?? result).slice(0, 200)}`);
    } else if (result.duplicate === true) {
      // Keys are unique per run and the store is reset: a duplicate means the server did less work.
      duplicates += 1;
      if (problems.length < 3) problems.push(`line ${result.line}: acknowledged as a duplicate`);
    }
  }
  let missing = 0;
  for (let line = 1; line <= posts; line++) if (seen[line] === 0) missing += 1;
  return { results, errors, duplicates, repeated, missing, malformed, problems };
}

async function admin(server, method, path) {
  const httpUrl = server.url.replace(/^ws/, 'http');
  // Admin POSTs must say they are JSON (a web page cannot send that cross-site).
  const response = await fetch(`${httpUrl}/_admin/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
  });
  const body = await response.text();
  if (!response.ok) throw new Error(`${method} /_admin/${path}: HTTP ${response.status} ${body.slice(0, 200)}`);
  return JSON.parse(body);
}

function sides(server, config) {
  const env = { ...process.env, STREAM_POSTS_API_KEY: STREAM_KEY, NO_COLOR: '1' };
  delete env.STREAM_POSTS_URL;
  return [
    {
      target: 'ours',
      label: 'stream-posts post --batch',
      args: [
        CLI,
        'post',
        '--batch',
        '--stream',
        STREAM_ID,
        '--window',
        String(config.window),
        '--url',
        server.url,
        '--json',
      ],
      env,
    },
    {
      target: 'bare',
      label: 'bare ws client',
      args: [BARE_CLIENT, `--url=${server.url}`, `--stream=${STREAM_ID}`, `--window=${config.window}`],
      env,
    },
  ];
}

/** Fails clearly when the built CLI has no `post --batch` (yet). */
async function requireBatchCommand() {
  const help = await runTimed(process.execPath, [CLI, 'post', '--help'], {
    name: 'stream-posts post --help',
    timeoutMs: 30_000,
  });
  if (help.code !== 0 || !/--batch\b/.test(help.stdout)) {
    throw new Error(
      'the built CLI has no `post --batch`: `node bin/stream-posts.js post --help` ' +
        (help.code !== 0 ? `${describeFailure(help)}` : 'does not list --batch') +
        '. Build it (npm run build) once `post --batch` is in src/, then run this again.',
    );
  }
}

async function measure(server, side, run, config, posts = config.posts) {
  await admin(server, 'POST', 'reset');
  const cpuBefore = server.cpuTimeMs();
  const result = await runTimed(process.execPath, side.args, {
    input: input(run, config, posts),
    env: side.env,
    name: side.label,
    timeoutMs: 300_000,
  });
  const serverCpuMs = server.cpuTimeMs() - cpuBefore;
  const state = await admin(server, 'GET', 'state');
  const check = checkResults(result.stdout, posts);
  const problems = [...check.problems];
  let errorsTotal = check.errors + check.duplicates + check.missing + check.repeated + check.malformed;
  if (result.code !== 0 || result.signal !== null) {
    // A failed exit counts even when every line it printed was a success.
    if (check.errors === 0) errorsTotal += 1;
    problems.unshift(describeFailure(result));
  }
  // After a reset the idempotency map holds one key per post published in this run.
  const storedPosts = state.idempotencyKeys;
  if (storedPosts !== posts) {
    errorsTotal += 1;
    problems.push(`the server stored ${storedPosts} posts with idempotency keys, expected ${posts}`);
  }
  return {
    run,
    exitCode: result.code,
    wallMs: round(result.wallMs, 4),
    postsPerSecond: Math.round((posts / result.wallMs) * 1000),
    firstResultMs: result.firstOutputMs === null ? null : round(result.firstOutputMs, 4),
    // Start-up and exit left out: the publishing rate once results flow.
    steadyPostsPerSecond:
      result.firstOutputMs === null || result.lastOutputMs <= result.firstOutputMs
        ? null
        : Math.round((posts / (result.lastOutputMs - result.firstOutputMs)) * 1000),
    serverCpuMsPer1kPosts: Number.isFinite(serverCpuMs) ? round((serverCpuMs / posts) * 1000, 3) : null,
    storedPosts,
    ...check,
    errorsTotal,
    problems,
  };
}

function logRun(log, label, prefix, r) {
  if (r.results === 0) throw new Error(`${label} printed no results: ${r.problems.join('; ')}`);
  log(
    `  ${prefix} ${label.padEnd(26)} ${String(r.postsPerSecond).padStart(6)} posts/s  wall ${r.wallMs} ms  first result ${r.firstResultMs} ms` +
      `  steady ${r.steadyPostsPerSecond} posts/s  server CPU ${r.serverCpuMsPer1kPosts} ms/1k  errors ${r.errorsTotal}`,
  );
  for (const problem of r.problems) log(`      ${problem}`);
}

function summarize(runs) {
  return {
    postsPerSecond: medianOf(runs, 'postsPerSecond'),
    wallMs: medianOf(runs, 'wallMs'),
    steadyPostsPerSecond: medianOf(runs, 'steadyPostsPerSecond'),
    firstResultMs: medianOf(runs, 'firstResultMs'),
    serverCpuMsPer1kPosts: medianOf(runs, 'serverCpuMsPer1kPosts'),
    errors: sumOf(runs, 'errorsTotal'),
  };
}

const figure = (...args) => comparison('bare ws client', ...args);

/**
 * `post --batch` against a `serve` at its default rate limit: the median spawn-to-exit time
 * against the time the limit allows, measured in this run.
 */
async function limitedFigures(config, log) {
  const server = await startStreamPosts([]);
  try {
    const [side] = sides(server, config);
    const allowedMs = ((config.limitedPosts - DEFAULT_LIMIT.burst) / DEFAULT_LIMIT.perSecond) * 1000;
    const runs = [];
    for (let i = 0; i < config.limitedRuns; i++) {
      const r = await measure(server, side, `limited-${i + 1}`, config, config.limitedPosts);
      runs.push(r);
      logRun(log, `${side.label} (limited)`, `run ${i + 1}/${config.limitedRuns}`, r);
    }
    const wallMs = medianOf(runs, 'wallMs');
    const errors = sumOf(runs, 'errorsTotal');
    const ratio = round(wallMs / allowedMs, 3);
    return {
      runs,
      figures: [
        comparison(
          `time the limit allows, (posts - ${DEFAULT_LIMIT.burst}) / ${DEFAULT_LIMIT.perSecond}/s`,
          `wall time for ${config.limitedPosts.toLocaleString('en-US')} posts at the default rate limit, spawn to exit`,
          'ms',
          wallMs,
          allowedMs,
          { ratio, target: `ratio <= ${config.limitedTarget}`, met: ratio <= config.limitedTarget && errors === 0 },
        ),
        comparison('none', 'errors at the default rate limit', 'posts', errors, null, {
          ratio: null,
          target: '0',
          met: errors === 0,
        }),
      ],
    };
  } finally {
    await server.stop();
  }
}

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  // --bare-only checks the harness and the baseline without the CLI's post --batch.
  if (!config.bareOnly) await requireBatchCommand();
  const limited = config.bareOnly ? undefined : await limitedFigures(config, log);
  const limitedNote =
    `At the default rate limit: ${config.limitedPosts.toLocaleString('en-US')} posts to a second serve with its default limits ` +
    `(${DEFAULT_LIMIT.perSecond}/s, burst ${DEFAULT_LIMIT.burst}), median of ${config.limitedRuns} runs, against the time the limit allows. `;
  if (config.limitedOnly) {
    return {
      name: 'batch',
      figures: limited.figures,
      notes: `${limitedNote}LIMITED ONLY (--limited-only): the comparison with the bare client was not run.`,
      config,
      runs: { limited: limited.runs },
    };
  }

  const server = await startStreamPosts([
    '--rate-limit',
    '0',
    '--max-idempotency-keys',
    '0',
    '--max-idempotency-bytes',
    '0',
  ]);
  try {
    const active = sides(server, config).filter((side) => !config.bareOnly || side.target === 'bare');
    const results = { ours: [], bare: [] };

    let runId = 1;
    for (let i = 0; i < config.warmup; i++) {
      for (const side of active)
        logRun(log, side.label, `warm-up ${i + 1}/${config.warmup}`, await measure(server, side, runId++, config));
    }
    for (let i = 0; i < config.runs; i++) {
      // Alternate which side goes first, so drift over time favours neither.
      const order = i % 2 === 0 ? active : [...active].reverse();
      for (const side of order) {
        const r = await measure(server, side, runId++, config);
        results[side.target].push(r);
        logRun(log, side.label, `run ${i + 1}/${config.runs}`, r);
      }
    }

    const o = results.ours.length > 0 ? summarize(results.ours) : {};
    const b = summarize(results.bare);
    const ratio = o.postsPerSecond === undefined ? null : round(o.postsPerSecond / b.postsPerSecond, 3);
    const pick = (key) => o[key] ?? null;
    return {
      name: 'batch',
      figures: [
        figure('posts per second, spawn to exit', 'posts/s', pick('postsPerSecond'), b.postsPerSecond, {
          ratio,
          target: `ratio >= ${config.target}`,
          met: ratio !== null && ratio >= config.target,
        }),
        figure(`wall time for ${config.posts.toLocaleString('en-US')} posts`, 'ms', pick('wallMs'), b.wallMs),
        figure(
          'posts per second, first result to last',
          'posts/s',
          pick('steadyPostsPerSecond'),
          b.steadyPostsPerSecond,
        ),
        figure('spawn to first result', 'ms', pick('firstResultMs'), b.firstResultMs),
        figure('server CPU per 1,000 posts', 'ms', pick('serverCpuMsPer1kPosts'), b.serverCpuMsPer1kPosts),
        figure('errors', 'posts', o.errors ?? null, b.errors, {
          ratio: null,
          target: '0',
          met: o.errors === 0 && b.errors === 0,
        }),
        ...(limited?.figures ?? []),
      ],
      notes:
        `${config.posts.toLocaleString('en-US')} posts (${config.contentBytes}-byte rawtext content, an idempotencyKey each) as NDJSON on stdin, ` +
        `window ${config.window}, one stream-posts serve (--rate-limit 0) reset through /_admin/reset before every run; ` +
        `each side a fresh node process timed from spawn to exit; median of ${config.runs} runs per side, alternating, after ${config.warmup} warm-up run(s) each. ` +
        `Errors = error results + duplicate acks + missing/repeated/unparseable result lines + failed exits + posts the server did not store.` +
        (config.bareOnly ? ' BARE ONLY (--bare-only): stream-posts post --batch was not run.' : ` ${limitedNote}`),
      config,
      runs: { ...results, ...(limited ? { limited: limited.runs } : {}) },
    };
  } finally {
    await server.stop();
  }
}
