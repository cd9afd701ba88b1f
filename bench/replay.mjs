/**
 * bench/replay — how fast `serve --replay --replay-speed max` delivers a recorded feed,
 * against a scenario of the same posts played by `serve --scenario` (target: ≥ 0.8× its rate).
 *
 * Processes: `stream-posts serve` (the built CLI, `--rate-limit 0`, the demo seed) in its own
 * process, once per side and run; this process holds one subscriber connection (`/v1/ws` with
 * the demo reader's key in the query, the hosted dialect) and counts what it receives.
 *
 * - Ours: a recording of one such connection, written here: the `connected` greeting, the
 *   client's `on-stream-post` for `macro-wire`, its `sub_ack`, then `posts` recorded
 *   `stream.post.created` frames, one a millisecond, each carrying a post as the hosted
 *   dialect sends it (`content` bytes of text). Served with `--replay-speed max`: the
 *   subscriber connects, sends the same `on-stream-post`, and receives every frame.
 * - Baseline: a scenario of the same posts (`publish` steps of the same texts to
 *   `macro-wire`, one a millisecond of scenario time), played with `--speed` 1000 from a
 *   start `lead` seconds of real time ahead, so the subscriber is in before the first post.
 *
 * Each side's rate runs from the first post's arrival to the last's: posts ÷ that time. The
 * replay's frames are checked to arrive complete and in order (their ids), the scenario's
 * count only (the service numbers its own posts).
 *
 * Flags (through bench/run.mjs): --posts (100000), --content (120), --runs (1), --lead (3).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { readFlags } from './lib/config.mjs';
import { startsWith } from './lib/frames.mjs';
import { startStreamPosts } from './lib/processes.mjs';
import { comparison, median, round } from './lib/stats.mjs';

const DEFAULTS = { posts: 100_000, content: 120, runs: 1, lead: 3 };
const KEY = 'sp_demo_reader_alice';
const STREAM = 'macro-wire';
const SCENARIO_SPEED = 1000;
const POST_FRAME = Buffer.from('{"event":"stream.post.created"');
const RECORDED_AT = '2026-01-05T10:00:00.000Z';
const SUBSCRIBE = { event: 'on-stream-post', data: { streamIds: STREAM, lastPosts: 0 } };

const textOf = (i, bytes) => `post ${i} `.padEnd(bytes, 'x');

/** The recording of one subscriber's session: greeting, subscribe, `posts` posts a millisecond apart. */
function recordingOf({ posts, content }) {
  const at = (ms) => new Date(Date.parse(RECORDED_AT) + ms).toISOString();
  const events = [
    {
      t: 0,
      from: 'server',
      op: 'text',
      json: {
        event: 'connected',
        data: { message: 'connected', userId: 'alice', streams: [STREAM], serverTime: at(0) },
      },
    },
    { t: 10, from: 'client', op: 'text', json: SUBSCRIBE },
    {
      t: 11,
      from: 'server',
      op: 'text',
      json: { event: 'sub_ack', data: { command: 'on-stream-post', streamIds: [STREAM], lastPosts: 0 } },
    },
  ];
  for (let i = 0; i < posts; i += 1) {
    const t = 20 + i;
    events.push({
      t,
      from: 'server',
      op: 'text',
      json: {
        event: 'stream.post.created',
        data: {
          id: `p${i}`,
          streamId: STREAM,
          streamName: 'Macro Wire',
          text: textOf(i, content),
          contentType: 'rawtext',
          createdAt: at(t),
          releaseAt: null,
          hidden: false,
          customTarget: null,
        },
      },
    });
  }
  return {
    meta: {
      format: 'stream-posts-recording',
      version: 1,
      recordedAt: RECORDED_AT,
      upstream: 'wss://upstream.example',
      tool: { name: 'stream-posts', version: '0.0.0' },
      dialect: 'hosted',
      redactions: [{ kind: 'api-key', placeholder: '<key-1>', count: 1 }],
      truncated: false,
    },
    connections: [
      {
        id: 1,
        at: 0,
        transport: 'ws',
        request: { path: '/v1/ws', query: [['apiKey', '<key-1>']], headers: {} },
        events,
      },
    ],
    requests: [],
  };
}

/** The same posts as scenario steps, starting `lead` seconds of real time after start-up. */
function scenarioOf({ posts, content, lead }) {
  const start = lead * 1000 * SCENARIO_SPEED;
  const lines = [];
  for (let i = 0; i < posts; i += 1)
    lines.push(JSON.stringify({ at: start + i, publish: { stream: STREAM, content: textOf(i, content) } }));
  return `${lines.join('\n')}\n`;
}

/** Subscribes on a fresh connection and resolves with the arrival times of the first and last of `posts` posts. */
function receive(url, posts, { sendSubscribe, checkOrder }) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/ws?apiKey=${KEY}`);
    let count = 0;
    let first = 0;
    let last;
    ws.on('open', () => {
      if (sendSubscribe) ws.send(JSON.stringify(SUBSCRIBE));
    });
    ws.on('message', (data) => {
      if (!startsWith(data, POST_FRAME)) return;
      if (count === 0) first = performance.now();
      if (checkOrder && (count === 0 || count === posts - 1)) {
        const id = JSON.parse(data.toString()).data.id;
        if (id !== `p${count}`) reject(new Error(`post ${count} arrived as ${id}`));
      }
      count += 1;
      if (count === posts) {
        last = performance.now();
        ws.close();
      }
    });
    ws.on('close', (code) => {
      if (count === posts) resolve({ first, last });
      else reject(new Error(`closed (${code}) after ${count} of ${posts} posts`));
    });
    ws.on('error', reject);
  });
}

async function replayRun(config, file) {
  const server = await startStreamPosts(['--rate-limit', '0', '--replay', file, '--replay-speed', 'max'], {
    timeoutMs: 120_000,
  });
  try {
    const { first, last } = await receive(server.url, config.posts, { sendSubscribe: true, checkOrder: true });
    return (config.posts - 1) / ((last - first) / 1000);
  } finally {
    await server.stop();
  }
}

async function scenarioRun(config, file) {
  const server = await startStreamPosts(['--rate-limit', '0', '--scenario', file, '--speed', String(SCENARIO_SPEED)], {
    timeoutMs: 120_000,
  });
  try {
    const { first, last } = await receive(server.url, config.posts, { sendSubscribe: true, checkOrder: false });
    return (config.posts - 1) / ((last - first) / 1000);
  } finally {
    await server.stop();
  }
}

export async function run({ flags, log }) {
  const config = readFlags(flags, DEFAULTS, { whole: true });
  const folder = await mkdtemp(join(tmpdir(), 'stream-posts-bench-replay-'));
  try {
    const recordingFile = join(folder, 'recording.json');
    const scenarioFile = join(folder, 'scenario.ndjson');
    await writeFile(recordingFile, JSON.stringify(recordingOf(config)));
    await writeFile(scenarioFile, scenarioOf(config));
    const replayRates = [];
    const scenarioRates = [];
    for (let i = 0; i < config.runs; i += 1) {
      replayRates.push(await replayRun(config, recordingFile));
      log(`run ${i + 1}: replay ${round(replayRates.at(-1))} frames/s`);
      scenarioRates.push(await scenarioRun(config, scenarioFile));
      log(`run ${i + 1}: scenario ${round(scenarioRates.at(-1))} posts/s`);
    }
    const ours = round(median(replayRates));
    const baseline = round(median(scenarioRates));
    const figure = comparison(
      `serve --scenario of the same posts, --speed ${SCENARIO_SPEED}`,
      `serve --replay --replay-speed max: ${config.posts} recorded frames to one subscriber`,
      'frames/s',
      ours,
      baseline,
    );
    figure.target = 'ratio >= 0.8';
    figure.met = figure.ratio !== null && figure.ratio >= 0.8;
    return {
      name: 'replay',
      figures: [figure],
      notes: [
        `${config.content}-byte texts; rates from the first post's arrival to the last's; median of ${config.runs} run(s)`,
      ],
      config,
    };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
