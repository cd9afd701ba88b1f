import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, startServer, type PostEvent } from '../../src/index.js';
import { advanceClock, KEYS, publishToStream } from '../support/harness.js';
import { cliCommandLine, ensureBuilt, runToEnd } from '../support/cli.js';
import { expectCleanError, jsonLines, subscribedInProcess, waitForLines } from '../support/cli-output.js';
import { runInProcess } from '../support/in-process.js';
import { inMs } from '../support/fixtures.js';
import { until } from '../support/poll.js';
import { startServe } from '../support/serve.js';

beforeAll(ensureBuilt);

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-scenario-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function writeTemp(name: string, text: string): Promise<string> {
  const path = join(tmp, name);
  await writeFile(path, text);
  return path;
}

const ndjson = (steps: unknown[]) => steps.map((step) => `${JSON.stringify(step)}\n`).join('');

/** What a subscriber saw of a post, without what a replay gives anew (ids, times). */
function seen(type: string, post: any): unknown[] {
  return [type, post.streamId, post.text, post.contentType, post.hidden, post.customTarget];
}

describe('a recorded feed replays offline', () => {
  it('listen --json output, converted with scenario from-recording and played stepped, gives the same posts in the same order', async () => {
    const serve = await startServe();
    const listen = await subscribedInProcess(['listen', '--url', serve.url, '--api-key', KEYS.alice, '--json']);
    await publishToStream(serve.url, 'macro-wire', 'Fed holds rates');
    await publishToStream(serve.url, 'crypto-legal', '**SEC** drops the case', { contentType: 'markdown' });
    await publishToStream(serve.url, 'macro-wire', 'embargoed CPI print', { releaseAt: inMs(3_600_000) });
    await publishToStream(serve.url, 'whale-alerts', '1,000 BTC moved', { customTarget: 'BTC' });
    await advanceClock(serve, 3_600_000);
    await publishToStream(serve.url, 'crypto-legal', 'after the release');
    const recorded = await waitForLines(listen, 6);
    const recording = await writeTemp('recording.ndjson', listen.stdout);

    const scenarioFile = join(tmp, 'replay.ndjson');
    const converted = await runInProcess(['scenario', 'from-recording', recording, '--output', scenarioFile, '--json']);
    expect(converted.code, converted.stderr).toBe(0);
    expect(converted.stderr).toBe('');
    // --json with --output: one line saying what was written.
    expect(jsonLines(converted.stdout)).toEqual([{ output: scenarioFile, steps: expect.any(Number), warnings: [] }]);

    const server = await startServer({ port: 0 });
    try {
      const alice = await connect({ url: server.url, apiKey: server.keys.readers['alice']! });
      const feed = alice.subscribe();
      await feed.ready;
      const playback = await server.play(scenarioFile, { stepped: true });
      while ((await server.step()) !== undefined);
      expect(await playback.done).toEqual({ steps: playback.steps, published: 5, failed: 0 });
      const replayed: PostEvent[] = [];
      for await (const event of feed) {
        replayed.push(event);
        if (replayed.length === recorded.length) break;
      }
      expect(replayed.map((event) => seen(event.type, event.post))).toEqual(
        recorded.map((line) => seen(line.event === 'stream.post.released' ? 'released' : 'created', line.data)),
      );
      await alice.close();
    } finally {
      await server.close();
    }
  });
});

describe('serve --scenario', () => {
  it('plays at --speed, logs its start and end, and --exit-after-scenario stops serve (exit 0) with every post stored', async () => {
    const scenario = await writeTemp(
      'fast.ndjson',
      ndjson([
        { at: 0, publish: { stream: 'macro-wire', content: 'one' } },
        { at: '2s', publish: { stream: 'crypto-legal', content: 'two', hidden: true, releaseAt: '+5s' } },
        { at: '5s', log: 'the release is due' },
        { at: '10s', publish: { stream: 'whale-alerts', content: 'three', customTarget: 'SOL', idempotencyKey: 'k' } },
        { at: '11s', publish: { stream: 'whale-alerts', content: 'three', customTarget: 'SOL', idempotencyKey: 'k' } },
      ]),
    );
    const state = join(tmp, 'fast-state.json');
    const args = ['serve', '--port', '0', '--log-format', 'json', '--state', state, '--scenario', scenario];
    const result = await runToEnd([...args, '--speed', '1000', '--exit-after-scenario']);
    expect(result.code, result.stderr).toBe(0);
    const logs = jsonLines(result.stderr);
    const messages = logs.map((line) => line.msg);
    expect(messages.indexOf('scenario started')).toBeLessThan(messages.indexOf('scenario ended'));
    expect(logs.find((line) => line.msg === 'scenario started')).toMatchObject({ steps: 5, speed: 1000 });
    expect(logs.find((line) => line.msg === 'scenario ended')).toMatchObject({ steps: 5, published: 3, failed: 0 });
    expect(logs.filter((line) => line.msg === 'scenario published').map((line) => line.duplicate)).toEqual([
      false,
      false,
      false,
      true,
    ]);

    const saved = JSON.parse(await readFile(state, 'utf8'));
    const last = (stream: string) => saved.streams[stream].at(-1);
    expect(last('macro-wire')).toMatchObject({ text: 'one', hidden: false });
    // Played 1000 times faster, the clock was still moved to each step's time: the release came at its own.
    expect(last('crypto-legal')).toMatchObject({ text: 'two', hidden: false });
    // releaseAt "+5s" is five seconds of service time after the start; the post was published at "2s".
    const hiddenFor = Date.parse(last('crypto-legal').releaseAt) - Date.parse(last('crypto-legal').createdAt);
    expect(hiddenFor).toBeGreaterThan(2_900);
    expect(hiddenFor).toBeLessThanOrEqual(3_000);
    expect(last('whale-alerts')).toMatchObject({ text: 'three', customTarget: 'SOL' });
    expect(saved.clockOffsetMs).toBeGreaterThanOrEqual(10_000);
  });

  it('with --exec, --exit-after-scenario ends the command once the scenario has played; serve exits 0', async () => {
    // A command that never subscribes: the scenario starts with serve.
    const scenario = await writeTemp(
      'exec.ndjson',
      ndjson([{ at: '1m', publish: { stream: 'macro-wire', content: 'x' } }]),
    );
    const result = await runToEnd([
      'serve',
      '--port',
      '0',
      '--scenario',
      scenario,
      '--speed',
      '100000',
      '--exit-after-scenario',
      '--scenario-start',
      'at-start',
      '--exec',
      'sleep 600',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/scenario ended steps=1 published=1 failed=0/);
  });

  it('with --exec, the scenario starts at the first subscription: listen --count 5 gets all five posts, the first at 0 s among them', async () => {
    const scenario = await writeTemp(
      'first-subscriber.ndjson',
      ndjson(
        ['0s', '100ms', '200ms', '300ms', '400ms'].map((at, i) => ({
          at,
          publish: { stream: 'macro-wire', content: `step ${i + 1}` },
        })),
      ),
    );
    const listen = cliCommandLine(['listen', '--streams', 'macro-wire', '--count', '5', '--json']);
    const result = await runToEnd(['serve', '--port', '0', '--scenario', scenario, '--exec', listen]);
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).map((line) => (line as { data: { text: string } }).data.text)).toEqual(
      [1, 2, 3, 4, 5].map((n) => `step ${n}`),
    );
  });

  it('play(…, { start: "first-subscriber" }) starts the scenario when a subscription goes live', async () => {
    const server = await startServer({ port: 0 });
    try {
      const playback = await server.play([{ at: 0, publish: { stream: 'macro-wire', content: 'at time 0' } }], {
        start: 'first-subscriber',
      });
      const alice = await connect({ url: server.url, apiKey: server.keys.readers['alice']! });
      const feed = alice.subscribe({ streamIds: ['macro-wire'], lastPosts: 0 });
      await feed.ready;
      for await (const event of feed) {
        expect(event.post.text).toBe('at time 0');
        break;
      }
      expect(await playback.done).toEqual({ steps: 1, published: 1, failed: 0 });
      await alice.close();
    } finally {
      await server.close();
    }
  });

  it('a first subscription over the tree feed starts it too', async () => {
    const server = await startServer({ port: 0 });
    try {
      const playback = await server.play([{ at: 0, publish: { stream: 'macro-wire', content: 'to the tree' } }], {
        start: 'first-subscriber',
      });
      const feed = new WebSocket(`${server.url}/graphql?format=tree&streamIds=macro-wire&lastPosts=0`, {
        headers: { 'x-api-key': server.keys.readers['alice']! },
      });
      const texts: string[] = [];
      feed.on('message', (data) => texts.push(data.toString()));
      await until(() => texts.some((text) => text.includes('to the tree')), 'the tree item of the step at 0 s');
      expect(await playback.done).toEqual({ steps: 1, published: 1, failed: 0 });
      feed.terminate();
    } finally {
      await server.close();
    }
  });

  const invalid: [string, string, string][] = [
    [
      'an unknown stream (NDJSON: the line)',
      ndjson([
        { at: 0, log: 'fine' },
        { at: '1s', publish: { stream: 'nope', content: 'x' } },
      ]),
      'line 2: publish.stream: the seed has no stream "nope"',
    ],
    [
      'a bad offset (JSON array: the index)',
      JSON.stringify([
        { at: 0, log: 'fine' },
        { at: 'soon', log: 'x' },
      ]),
      'step 1: at: must be a duration such as "1.5s", "200ms" or a number of ms, up to 10 years; got "soon"',
    ],
    [
      'a custom stream without its target',
      ndjson([{ at: 0, publish: { stream: 'whale-alerts', content: 'x' } }]),
      'line 1: publish.customTarget: stream "whale-alerts" is custom: one of BTC, ETH, SOL is required',
    ],
    [
      'an unknown field',
      ndjson([{ at: 0, publish: { stream: 'macro-wire', content: 'x', colour: 'red' } }]),
      'line 1: publish: Unrecognized key: "colour"',
    ],
    [
      'a hidden post without its release time',
      ndjson([{ at: 0, publish: { stream: 'macro-wire', content: 'x', hidden: true } }]),
      'line 1: publish.releaseAt: a hidden post needs its release time',
    ],
    [
      'a hidden post released before the step publishes it',
      ndjson([{ at: '10s', publish: { stream: 'macro-wire', content: 'x', hidden: true, releaseAt: '+5s' } }]),
      'line 1: publish.releaseAt: a hidden post must be released after the step publishes it',
    ],
    [
      'two actions in one step',
      ndjson([{ at: 0, log: 'x', advanceClock: '1m' }]),
      'line 1: a step does one thing; this one has advanceClock and log',
    ],
    ['a line that is not JSON', '{"at": 0, "log": "x"}\n{"at": 1,\n', 'line 2: not valid JSON'],
    [
      'a fault that POST /_admin/faults would refuse',
      ndjson([{ at: 0, fault: { type: 'explode' } }]),
      'line 1: fault.type must be one of close, refuse-connections,',
    ],
  ];

  it.each(invalid)('refuses %s: exit 2 naming the step and field, nothing served', async (_name, text, message) => {
    const scenario = await writeTemp('invalid.ndjson', text);
    const result = await runToEnd(['serve', '--port', '0', '--scenario', scenario]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`stream-posts: --scenario: scenario file ${scenario}: ${message}`);
    expect(result.stdout).not.toContain('listening on');
    expectCleanError(result.stderr);
  });

  it('--speed must be a number above 0 (exit 2, the flag named)', async () => {
    const scenario = await writeTemp('speed.ndjson', ndjson([{ at: 0, log: 'x' }]));
    for (const speed of ['0', '-2', 'fast']) {
      const result = await runToEnd(['serve', '--port', '0', '--scenario', scenario, '--speed', speed]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`option '--speed <n>' argument '${speed}' is invalid`);
      expect(result.stderr).toContain(`expected a number above 0 (e.g. 10 for ten times faster), got "${speed}"`);
    }
  });

  it('--speed, --exit-after-scenario and --scenario-start need --scenario (exit 2)', async () => {
    for (const flag of [['--speed', '10'], ['--exit-after-scenario'], ['--scenario-start', 'at-start']]) {
      const result = await runToEnd(['serve', '--port', '0', ...flag]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`stream-posts: ${flag[0]} needs --scenario FILE`);
    }
  });
});

describe('scenario from-recording', () => {
  it('refuses a line that is not a post event of listen --json (exit 2, the line named)', async () => {
    const recording = await writeTemp(
      'not-listen.ndjson',
      `${JSON.stringify({ event: 'stream.post.created', data: { id: 'p1', streamId: 'macro-wire', text: 'a', contentType: 'rawtext', createdAt: '2026-01-01T00:00:00.000Z', releaseAt: null, hidden: false, customTarget: null } })}\n{"_id":"tree item"}\n`,
    );
    const result = await runInProcess(['scenario', 'from-recording', recording]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `stream-posts: recording ${recording}: line 2: not a post event as \`listen --json\``,
    );
    expect(result.stdout).toBe('');
  });

  it('keeps the recorded timing as offsets, and warns about a hidden post whose text it never saw', async () => {
    const post = (id: string, createdAt: string, extra: Record<string, unknown> = {}) => ({
      event: 'stream.post.created',
      data: {
        id,
        streamId: 'macro-wire',
        text: 'x',
        contentType: 'rawtext',
        createdAt,
        releaseAt: null,
        hidden: false,
        customTarget: null,
        ...extra,
      },
    });
    const recording = await writeTemp(
      'timed.ndjson',
      ndjson([
        post('a', '2026-01-01T00:00:00.000Z'),
        post('b', '2026-01-01T00:00:01.500Z', { text: null, hidden: true, releaseAt: '2026-01-01T00:01:00.000Z' }),
        post('a', '2026-01-01T00:00:00.000Z'),
      ]),
    );
    const result = await runInProcess(['scenario', 'from-recording', recording]);
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout)).toEqual([
      { at: 0, publish: { stream: 'macro-wire', content: 'x', contentType: 'rawtext' } },
      {
        at: 1500,
        publish: {
          stream: 'macro-wire',
          content: '(hidden when recorded; its text was not recorded)',
          contentType: 'rawtext',
          hidden: true,
          releaseAt: '+60000ms',
        },
      },
    ]);
    expect(result.stderr).toContain('stream-posts: warning: line 2: the text of hidden post b was not recorded');
  });
});
