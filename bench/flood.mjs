/**
 * bench/flood — one connection sends 100,000 malformed frames (`{"event":`, 9 bytes each, in
 * one write); meanwhile fresh clients connect one after another. Measures the server's CPU
 * time for the flood and how long a fresh client waits for `connected` while it arrives.
 *
 * Processes: `stream-posts serve` (the built CLI, default limits, --quiet, built-in demo
 * seed) and, as the baseline, bench/flood-bare-server.mjs: a bare ws server that parses each
 * frame and replies an error to it. The flooder is a raw TCP socket that writes pre-masked
 * frames and discards what it reads, so the client side costs next to nothing.
 *
 * CPU: the server process's user + system time (/proc) from just before the write until it
 * has stopped rising (two 100 ms samples unchanged, after the write has drained). Probe:
 * from `new WebSocket` to its `connected` event, one probe at a time, each closed 20 ms before
 * the next, from the write until the CPU settles; the figure is the slowest probe.
 *
 * The same probes before the flood (10 of them) give the machine's own figure, for reference.
 *
 * Flags: --frames (100000), --runs (3; the median run is reported).
 * Targets: flood CPU <= 1000 ms; slowest probe <= 100 ms.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { join } from 'node:path';
import { readFlags } from './lib/config.mjs';
import { REPO_ROOT, startServerProcess, startStreamPosts } from './lib/processes.mjs';

const DEFAULTS = { frames: 100_000, runs: 3 };
const KEY = 'sp_demo_reader_alice';
const PAYLOAD = Buffer.from('{"event":');
/** Between probes, so that probing does not itself keep the server busy. */
const PROBE_GAP_MS = 20;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` masked client text frames (an all-zero mask: the payload goes as it is). */
function floodBytes(count) {
  const frame = Buffer.concat([Buffer.from([0x81, 0x80 | PAYLOAD.length, 0, 0, 0, 0]), PAYLOAD]);
  return Buffer.concat(Array.from({ length: count }, () => frame));
}

/** A raw WebSocket connection that has seen its upgrade answered; counts what it receives. */
async function rawFlooder(url) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = 0;
  let head = '';
  const upgraded = new Promise((resolve) => {
    socket.on('data', (chunk) => {
      received += chunk.length;
      if (head !== null) {
        head += chunk.toString('latin1');
        if (head.includes('\r\n\r\n')) {
          head = null;
          resolve();
        }
      }
    });
  });
  socket.write(
    [
      'GET /v1/ws HTTP/1.1',
      `Host: ${hostname}:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      `x-api-key: ${KEY}`,
      '',
      '',
    ].join('\r\n'),
  );
  await upgraded;
  return { socket, received: () => received };
}

/** Milliseconds from opening a connection to its `connected` event. */
function probe(url) {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': KEY } });
    ws.on('error', reject);
    ws.on('message', (data) => {
      if (!data.toString().includes('"connected"')) return;
      const ms = performance.now() - startedAt;
      ws.terminate();
      resolve(ms);
    });
  });
}

async function untilCpuSettles(server) {
  let last = server.cpuTimeMs();
  for (let unchanged = 0; unchanged < 2;) {
    await sleep(100);
    const now = server.cpuTimeMs();
    unchanged = now === last ? unchanged + 1 : 0;
    last = now;
  }
  return last;
}

async function floodOnce(server, frames) {
  const flooder = await rawFlooder(server.url);
  // The same probes with no flood: what this machine's load alone costs a connection.
  const idle = [];
  for (let i = 0; i < 10; i += 1) {
    idle.push(await probe(server.url));
    await sleep(PROBE_GAP_MS);
  }
  const bytes = floodBytes(frames);
  const cpuBefore = server.cpuTimeMs();
  const written = new Promise((resolve) => flooder.socket.write(bytes, resolve));
  let settled = false;
  const probes = [];
  const probing = (async () => {
    while (!settled) {
      probes.push(await probe(server.url));
      await sleep(PROBE_GAP_MS);
    }
  })();
  await written;
  const cpuAfter = await untilCpuSettles(server);
  settled = true;
  await probing;
  flooder.socket.destroy();
  const slowest = (values) => values.reduce((a, b) => Math.max(a, b), 0);
  return {
    cpuMs: cpuAfter - cpuBefore,
    slowestProbeMs: slowest(probes),
    slowestIdleProbeMs: slowest(idle),
    probes: probes.length,
    repliedBytes: flooder.received(),
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value) => Math.round(value * 10) / 10;

export async function run({ flags, log }) {
  const config = readFlags(flags, DEFAULTS, { whole: true });
  const sides = {};
  for (const [target, start] of [
    ['ours', () => startStreamPosts([])],
    [
      'bare',
      () =>
        startServerProcess(process.execPath, [join(REPO_ROOT, 'bench', 'flood-bare-server.mjs')], { name: 'bare ws' }),
    ],
  ]) {
    const runs = [];
    for (let i = 0; i < config.runs; i += 1) {
      const server = await start();
      try {
        runs.push(await floodOnce(server, config.frames));
      } finally {
        await server.stop();
      }
      log(`${target} run ${i + 1}: ${JSON.stringify(runs.at(-1))}`);
    }
    sides[target] = {
      cpuMs: median(runs.map((r) => r.cpuMs)),
      slowestProbeMs: round(median(runs.map((r) => r.slowestProbeMs))),
      slowestIdleProbeMs: round(median(runs.map((r) => r.slowestIdleProbeMs))),
      repliedKiB: Math.round(median(runs.map((r) => r.repliedBytes)) / 1024),
      runs,
    };
  }
  const { ours, bare } = sides;
  const figure = (name, key, unit, target, limit) => ({
    figure: name,
    value: ours[key],
    unit,
    baseline: 'bare ws, parse + reply per frame',
    baselineValue: bare[key],
    ratio: bare[key] ? Math.round((ours[key] / bare[key]) * 1000) / 1000 : null,
    target: limit === undefined ? null : target,
    met: limit === undefined ? null : ours[key] <= limit,
  });
  return {
    name: 'flood',
    figures: [
      figure(
        `server CPU for ${config.frames.toLocaleString('en-US')} malformed frames`,
        'cpuMs',
        'ms',
        '<= 1000 ms',
        1000,
      ),
      figure('slowest fresh client to `connected` during the flood', 'slowestProbeMs', 'ms', '<= 100 ms', 100),
      figure('slowest fresh client to `connected`, no flood (this machine)', 'slowestIdleProbeMs', 'ms'),
      figure('bytes the flooder received back', 'repliedKiB', 'KiB'),
    ],
    notes:
      `One raw connection writes ${config.frames} frames of {"event": at once (demo reader key); fresh clients connect one at a time ` +
      `until the server's CPU settles. Median of ${config.runs} runs, a fresh server per run; stream-posts serve with its default ` +
      `limits (--quiet), the baseline a bare ws server that JSON.parses each frame and replies an error (${process.version}).`,
    config,
    sides,
  };
}
