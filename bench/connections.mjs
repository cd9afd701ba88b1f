/**
 * bench/connections — 10,000 idle subscribers on `stream-posts serve`: how long
 * the server takes to accept them, how many fail (must be 0), and how much
 * memory it holds per connection, side by side with a bare `ws` server
 * (bench/idle-ws-server.mjs) holding the same 10,000. Targets for the memory
 * store: no more than 1.1× the bare server's memory and 1.2× its CPU per
 * connection. With --store=redis, serve on a Redis store of the benchmark's own
 * is a side too, and `serve --workers N` (--server-workers, 2) on it; --hold=N
 * adds one run of that side alone holding N (20,000: more than one process may
 * open here).
 *
 * A subscriber is a real WebSocket with the reader key of the benchmark seed
 * (one reader following `streams` streams, 100 by default): it connects,
 * waits for `connected`, sends `on-stream-post` for one stream (subscriber i
 * takes stream i mod `streams`), waits for its `sub_ack`, and then stays idle.
 * `serve` runs with that seed (`--seed`, written to a temp dir) and
 * `--rate-limit 0`, other options default. The bare server sends the same
 * `connected` frame, answers each subscribe with a `sub_ack` of the same shape
 * and keeps its sockets in a set per stream.
 *
 * Processes: each run starts a fresh server (ours or bare) in a process of its
 * own; `workers` client processes (bench/connections-client.mjs), kept for the
 * whole benchmark, hold `connections / workers` subscribers each and open them
 * with at most `concurrency` handshakes in flight in all (split evenly over the
 * processes), the same for both servers. That stays below the servers' listen
 * backlog (511, Node's default), so no SYN is dropped and retried a second
 * later, which would time TCP's retry timer instead of the server (each run
 * records the machine-wide ListenOverflows count from /proc/net/netstat to
 * show it). Every process is started through /bin/sh, which raises its
 * soft open-file limit (`ulimit -n`) to 20,000 or the hard limit; the
 * benchmark stops, saying so, when a process still cannot hold its sockets.
 *
 * A run: server listening and idle → RSS before (VmRSS from /proc) → all
 * client processes start connecting at once → the time to accept runs from
 * the first `new WebSocket` to the last `sub_ack` (clocks comparable across
 * processes) → settle `settle-ms` → RSS sampled `samples` times, `sample-ms`
 * apart; the largest is RSS after → the subscribers still open at both ends
 * are counted (client side: sockets still open; server side: `GET
 * /_admin/state` for ours, `GET /state` for bare) → clients close, the server
 * stops. Memory per connection = (RSS after − RSS before) / connections held.
 * Failed connections = connections asked for − held after the settle (a
 * handshake that failed, a subscriber lost, or one the server does not count);
 * nothing is retried. Both servers also run with `--expose-gc` and
 * bench/connections-probe.mjs preloaded, which reports the live JS heap after
 * a full GC, before and after (an informational figure; the measured RSS is
 * sampled before the probe's GC).
 *
 * Before the measured runs the client processes open and close `warmup`
 * subscribers on a throwaway bare server, so that the first run does not meet
 * cold clients. Runs alternate between the two servers (ours first in odd
 * runs, bare first in even ones); figures are medians over `runs` runs per
 * side, failed connections the sum.
 *
 * Flags (through bench/run.mjs): --connections (10000), --workers (4), --runs
 * (2), --warmup (2000; 0 skips it), --concurrency (400 handshakes in flight
 * over all client processes), --streams (100), --settle-ms (1500), --samples
 * (4), --sample-ms (250), --timeout-ms (30000: a subscriber not ready by then
 * is a failure), --target (1.1), --cpu-target (1.2), --store (memory; redis
 * adds the Redis sides), --server-workers (2), --hold (0), and --profile[=DIR] to
 * have the servers write a .cpuprofile each (read it with bench/profile-summary.mjs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { ClientProcess } from './lib/client-process.mjs';
import { profileArgs, readFlags, requireWhole } from './lib/config.mjs';
import { CLI, REPO_ROOT, cpuTimeMs, startServerProcess, statusKiB } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { writeSeed } from './lib/seed.mjs';
import { comparison, medianOf, round, sumOf } from './lib/stats.mjs';

const DEFAULTS = {
  connections: 10_000,
  workers: 4,
  runs: 2,
  warmup: 2000,
  concurrency: 400,
  streams: 100,
  settleMs: 1500,
  samples: 4,
  sampleMs: 250,
  timeoutMs: 30_000,
  /** Memory per connection, memory store against bare: at most this ratio. */
  target: 1.1,
  /** Accept CPU per connection, memory store against bare: at most this ratio. */
  cpuTarget: 1.2,
  /** With --store=redis: serve processes (--workers) of the extra Redis side; 1 leaves it out. */
  serverWorkers: 2,
  /** With a --workers side: after the runs, one more of that side alone holding this many (0: none). */
  hold: 0,
};

/** The soft open-file limit every process asks for (or its hard limit, when lower). */
const OPEN_FILES = 20_000;
/** Descriptors a process needs besides its sockets (stdio, IPC, epoll, libuv, …). */
const SPARE_FILES = 64;
/** A server is idle this long after it is listening before RSS before is read. */
const IDLE_MS = 500;

const READER = 'bench-reader';
const READER_KEY = 'sp_bench_reader_key';
const CLIENT = join(REPO_ROOT, 'bench', 'connections-client.mjs');
const BARE_SERVER = join(REPO_ROOT, 'bench', 'idle-ws-server.mjs');
const PROBE = pathToFileURL(join(REPO_ROOT, 'bench', 'connections-probe.mjs')).href;

/** Stream ids as bench/idle-ws-server.mjs names them too. */
const streamIds = (count) => Array.from({ length: count }, (_, i) => `s${String(i).padStart(3, '0')}`);

function seed(streams) {
  const ids = streamIds(streams);
  return {
    users: [
      { id: READER, name: 'Bench reader', readerKey: READER_KEY, follows: ids },
      { id: 'newsdesk', name: 'Newsdesk (author)', readerKey: 'sp_bench_newsdesk_key', follows: [] },
    ],
    streams: ids.map((id) => ({ id, name: `Stream ${id}`, owner: 'newsdesk', key: `sp_bench_stream_${id}` })),
  };
}

function parseConfig(flags) {
  const config = readFlags(flags, DEFAULTS, { zero: ['warmup', 'hold'], profile: true });
  requireWhole(config, [
    'connections',
    'workers',
    'runs',
    'warmup',
    'concurrency',
    'streams',
    'samples',
    'serverWorkers',
    'hold',
  ]);
  config.store = flags?.store ?? 'memory';
  if (!['memory', 'redis'].includes(config.store))
    throw new RangeError(`--store must be memory or redis, got "${config.store}"`);
  if (config.hold % config.workers !== 0) throw new RangeError('--hold must be a multiple of --workers');
  if (config.connections % config.workers !== 0) throw new RangeError('--connections must be a multiple of --workers');
  if (config.concurrency < config.workers)
    throw new RangeError('--concurrency must be at least --workers (one handshake per process)');
  if (config.streams > 1000) throw new RangeError('--streams must be at most 1000');
  return config;
}

/**
 * `sh -c` script that raises the soft open-file limit to `OPEN_FILES` (or to
 * the hard limit when that is lower) and then becomes `"$0" "$@"`, the node
 * command line after it; exec keeps the pid, so signals and /proc reach node.
 */
const RAISE_OPEN_FILES =
  `[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge ${OPEN_FILES} ] || ` +
  `ulimit -n ${OPEN_FILES} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`;

/** The soft open-file limit of a process (Linux /proc); undefined elsewhere. */
function openFileLimit(pid) {
  try {
    const match = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return match[1] === 'unlimited' ? Infinity : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** Throws when a process may not open `needed` files; `instead` says which flags would need fewer. */
function requireOpenFiles(pid, needed, what, instead) {
  const limit = openFileLimit(pid);
  if (limit !== undefined && limit < needed) {
    throw new Error(
      `${what} may open ${limit} files but needs ${needed}: raise the hard limit (\`ulimit -Hn\`) or run with ${instead}`,
    );
  }
  return limit;
}

/** The machine-wide count of connections dropped because a listen queue was full (Linux /proc); undefined elsewhere. */
function listenOverflows() {
  try {
    const [names, values] = readFileSync('/proc/net/netstat', 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('TcpExt:'))
      .map((line) => line.split(/\s+/));
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return undefined;
  }
}

/** A server's process and, for `serve --workers`, its worker processes (Linux /proc). */
function serverPids(server) {
  try {
    const children = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, 'utf8').trim();
    return [server.pid, ...(children ? children.split(/\s+/).map(Number) : [])];
  } catch {
    return [server.pid];
  }
}

/** Summed over a server's processes; NaN when one cannot be read. */
const sumOver = (server, read) => serverPids(server).reduce((total, pid) => total + (read(pid) ?? NaN), 0);

/** `samples` readings of a server's RSS (all its processes), `intervalMs` apart (the first at once). */
async function sampleRss(server, samples, intervalMs) {
  const readings = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(intervalMs);
    const kib = sumOver(server, (pid) => statusKiB(pid, 'VmRSS'));
    readings.push(Number.isNaN(kib) ? undefined : kib);
  }
  if (readings.some((value) => value === undefined))
    throw new Error(`cannot read the RSS of ${server.name} from /proc`);
  return readings;
}

/**
 * Asks bench/connections-probe.mjs in the server for its memory after a full
 * GC (`nth` report of this server); null when it does not answer.
 */
async function probeHeap(server, nth) {
  server.child.kill('SIGUSR2');
  const pattern = new RegExp(`connections-probe ${nth} (\\{.*\\})\\n`);
  for (let waited = 0; waited < 5_000; waited += 20) {
    const match = pattern.exec(server.stderr());
    if (match) return JSON.parse(match[1]);
    await sleep(20);
  }
  return null;
}

/** One side of the comparison: how to start its server, where subscribers go, where it counts them. */
function sides(seedPath, config, redis) {
  const viaShell = (name, nodeArgs) => [
    '-c',
    RAISE_OPEN_FILES,
    process.execPath,
    '--expose-gc',
    '--import',
    PROBE,
    ...profileArgs(config, name),
    ...nodeArgs,
  ];
  const serve = (target, label, flags = [], workers = 1) => ({
    target,
    label,
    workers,
    start: async () => {
      // Each Redis side starts from an empty keyspace.
      if (flags.length > 0) await redis.flush();
      return startServerProcess(
        '/bin/sh',
        viaShell(`stream-posts-${target}`, [
          CLI,
          'serve',
          '--port',
          '0',
          '--quiet',
          '--seed',
          seedPath,
          '--rate-limit',
          '0',
          '--max-connections-per-key',
          '0',
          ...flags,
        ]),
        { name: label },
      );
    },
    path: '/v1/ws',
    headers: { 'x-api-key': READER_KEY },
    // With workers, each answers for its own connections: the clients' count is used instead.
    statePath: workers > 1 ? undefined : '/_admin/state',
  });
  return {
    ours: serve('ours', 'serve (memory)'),
    ...(redis && { redis: serve('redis', 'serve (redis)', ['--store', redis.url]) }),
    ...(redis &&
      config.serverWorkers > 1 && {
        workers: serve(
          'workers',
          `serve (redis) --workers ${config.serverWorkers}`,
          ['--store', redis.url, '--workers', String(config.serverWorkers)],
          config.serverWorkers,
        ),
      }),
    bare: {
      target: 'bare',
      label: 'bare ws',
      workers: 1,
      start: () =>
        startServerProcess(
          '/bin/sh',
          viaShell('bare-ws', [BARE_SERVER, `--streams=${config.streams}`, `--user=${READER}`]),
          {
            name: 'bare ws server',
          },
        ),
      path: '/',
      headers: {},
      statePath: '/state',
    },
  };
}

/** The server's own count of connections and subscriptions. */
async function serverState(server, side) {
  if (!side.statePath) return { connections: Infinity, subscriptions: Infinity };
  const response = await fetch(`${server.url.replace(/^ws/, 'http')}${side.statePath}`);
  const body = await response.text();
  if (!response.ok)
    throw new Error(`${side.label}: GET ${side.statePath}: HTTP ${response.status} ${body.slice(0, 200)}`);
  const state = JSON.parse(body);
  return { connections: state.connections, subscriptions: state.subscriptions };
}

function addCounts(into, counts) {
  for (const [reason, count] of Object.entries(counts)) into[reason] = (into[reason] ?? 0) + count;
  return into;
}

/** Process `index`'s share of `total` split over `processes` (the remainder goes to the first ones). */
const share = (total, processes, index) => Math.floor(total / processes) + (index < total % processes ? 1 : 0);

/** Has every client process open `perProcess` subscribers to the server of `side`; resolves to their replies. */
function connectAll(clients, config, perProcess, server, side) {
  const streams = streamIds(config.streams);
  return Promise.all(
    clients.map((client) =>
      client.request({
        type: 'connect',
        url: `${server.url}${side.path}`,
        headers: side.headers,
        count: perProcess,
        first: client.index * perProcess,
        streams,
        concurrency: share(config.concurrency, config.workers, client.index),
        timeoutMs: config.timeoutMs,
      }),
    ),
  );
}

const closeAll = (clients) => Promise.allSettled(clients.map((client) => client.request({ type: 'close' })));

/** Opens `connections` subscribers on a fresh server of one side, measures, and closes everything again. */
async function measure(side, clients, config, run, connections = config.connections) {
  const server = await side.start();
  let clientsConnected = false;
  try {
    const pids = serverPids(server);
    if (pids.length !== side.workers + (side.workers > 1 ? 1 : 0))
      throw new Error(`${side.label}: ${pids.length} processes, expected ${side.workers} worker(s) and their primary`);
    const openFiles = Math.min(
      ...pids.map((pid) =>
        requireOpenFiles(pid, Math.ceil(connections / side.workers) + SPARE_FILES, side.label, 'fewer --connections'),
      ),
    );
    await sleep(IDLE_MS);
    const rssBefore = (await sampleRss(server, 3, 100)).at(-1);
    // The probe answers for the primary only: no heap figure for a side with workers.
    const probe = (nth) => (side.workers > 1 ? null : probeHeap(server, nth));
    const heapBefore = await probe(1);
    const cpuBefore = sumOver(server, cpuTimeMs);
    const overflowsBefore = listenOverflows();

    clientsConnected = true;
    const connected = await connectAll(clients, config, connections / config.workers, server, side);
    const cpuMs = sumOver(server, cpuTimeMs) - cpuBefore;
    const overflows = listenOverflows() - overflowsBefore;
    const startedAt = Math.min(...connected.map((reply) => reply.startedAt));
    const readyTimes = connected.map((reply) => reply.lastReadyAt).filter((at) => at !== null);
    const ready = sumOf(connected, 'ready');
    const acceptMs = readyTimes.length > 0 ? Math.max(...readyTimes) - startedAt : null;

    await sleep(config.settleMs);
    const rssAfterSamples = await sampleRss(server, config.samples, config.sampleMs);
    const rssAfter = Math.max(...rssAfterSamples);
    const heapAfter = await probe(2);
    const state = await serverState(server, side);
    const checks = await Promise.all(clients.map((client) => client.request({ type: 'check' })));
    const clientOpen = sumOf(checks, 'open');

    const held = Math.min(clientOpen, state.connections, state.subscriptions);
    const failures = connected.reduce((into, reply) => addCounts(into, reply.failures), {});
    const perConnection = (before, after) => (held > 0 ? round((after - before) / held, 3) : null);
    return {
      run,
      server: side.target,
      serverProcesses: pids.length,
      connections,
      held,
      failed: connections - held,
      handshakeFailures: sumOf(connected, 'failed'),
      failures,
      lostAfterReady: sumOf(checks, 'lost'),
      lostCloseCodes: checks.reduce((into, reply) => addCounts(into, reply.lostCodes), {}),
      clientOpen,
      serverCounts: side.statePath ? state : null,
      acceptMs: acceptMs === null ? null : round(acceptMs, 4),
      connectionsPerSecond: acceptMs ? Math.round((ready / acceptMs) * 1000) : null,
      serverCpuMsPer1kConnections: Number.isFinite(cpuMs) && ready > 0 ? round((cpuMs / ready) * 1000, 3) : null,
      listenOverflowsMachineWide: Number.isFinite(overflows) ? overflows : null,
      rssBeforeKiB: rssBefore,
      rssAfterKiB: rssAfter,
      rssAfterSamplesKiB: rssAfterSamples,
      rssPerConnectionKiB: perConnection(rssBefore, rssAfter),
      rssAfterGcKiB: heapAfter ? Math.round(heapAfter.rss / 1024) : null,
      heapUsedBeforeKiB: heapBefore ? Math.round(heapBefore.heapUsed / 1024) : null,
      heapUsedAfterKiB: heapAfter ? Math.round(heapAfter.heapUsed / 1024) : null,
      heapPerConnectionKiB:
        heapBefore && heapAfter ? perConnection(heapBefore.heapUsed / 1024, heapAfter.heapUsed / 1024) : null,
      openFileLimit: openFiles,
      clientProcesses: connected.map((reply, index) => ({
        process: index,
        ready: reply.ready,
        failed: reply.failed,
        open: checks[index].open,
        lost: checks[index].lost,
        readyMsP50: round(reply.readyMs.p50, 3),
        readyMsP99: round(reply.readyMs.p99, 3),
        readyMsMax: round(reply.readyMs.max, 3),
      })),
    };
  } finally {
    if (clientsConnected) await closeAll(clients);
    await server.stop();
  }
}

/**
 * The client processes open and close `warmup` subscribers on a throwaway
 * bare server, so that the first measured run does not meet cold clients.
 */
async function warmUp(bare, clients, config, log) {
  const server = await bare.start();
  try {
    const replies = await connectAll(clients, config, Math.ceil(config.warmup / config.workers), server, bare);
    const failed = sumOf(replies, 'failed');
    log(`  client processes warmed up (${config.warmup} subscribers${failed > 0 ? `, ${failed} failed` : ''})`);
  } finally {
    await closeAll(clients);
    await server.stop();
  }
}

function summarize(runs) {
  return {
    rssPerConnectionKiB: medianOf(runs, 'rssPerConnectionKiB'),
    heapPerConnectionKiB: medianOf(runs, 'heapPerConnectionKiB'),
    acceptMs: medianOf(runs, 'acceptMs'),
    connectionsPerSecond: medianOf(runs, 'connectionsPerSecond'),
    serverCpuMsPer1kConnections: medianOf(runs, 'serverCpuMsPer1kConnections'),
    failed: sumOf(runs, 'failed'),
  };
}

export async function run(options = {}) {
  const config = parseConfig(options.flags);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const seedFile = await writeSeed('connections', seed(config.streams));

  const clients = [];
  let redis;
  try {
    if (config.store === 'redis') redis = await startRedis();
    for (let i = 0; i < config.workers; i++) {
      clients.push(
        new ClientProcess(CLIENT, i, {
          name: 'client process',
          fork: { execPath: '/bin/sh', execArgv: ['-c', RAISE_OPEN_FILES, process.execPath], serialization: 'json' },
        }),
      );
    }
    // Answered once node (not the shell) runs each client, with its open-file limit raised.
    await Promise.all(clients.map((client) => client.request({ type: 'check' })));
    const perProcess = config.connections / config.workers;
    const clientOpenFiles = clients.map((client) =>
      requireOpenFiles(client.pid, perProcess + SPARE_FILES, `client process ${client.index}`, 'more --workers'),
    );

    const all = sides(seedFile.path, config, redis);
    const { bare } = all;
    const list = Object.values(all);
    if (config.warmup > 0) await warmUp(bare, clients, config, log);
    const results = Object.fromEntries(list.map((side) => [side.target, []]));
    const report = (side, result) => {
      log(
        `  ${side.label.padEnd(18)} ${result.held} held, ${result.failed} failed` +
          `  accepted in ${result.acceptMs} ms (${result.connectionsPerSecond}/s)` +
          `  RSS ${Math.round(result.rssBeforeKiB / 1024)} → ${Math.round(result.rssAfterKiB / 1024)} MiB` +
          ` = ${result.rssPerConnectionKiB} KiB/connection  heap ${result.heapPerConnectionKiB} KiB/connection  CPU ${result.serverCpuMsPer1kConnections} ms/1k`,
      );
      if (result.listenOverflowsMachineWide > 0) {
        log(
          `    ${result.listenOverflowsMachineWide} connection(s) overflowed a listen queue on this machine during the run; dropped SYNs are retried after 1 s`,
        );
      }
      if (result.failed > 0) {
        log(
          `    failures: ${JSON.stringify(result.failures)}; lost after ready ${result.lostAfterReady}; server counts ${JSON.stringify(result.serverCounts)}`,
        );
      }
    };
    for (let i = 0; i < config.runs; i++) {
      // Each run starts with the next side, so drift over time favours none.
      const order = list.map((_, k) => list[(k + i) % list.length]);
      log(`  run ${i + 1}/${config.runs}`);
      for (const side of order) {
        const result = await measure(side, clients, config, i + 1);
        results[side.target].push(result);
        report(side, result);
      }
    }
    let hold;
    if (config.hold > 0 && all.workers) {
      log(`  ${all.workers.label} alone, ${config.hold} connections`);
      hold = await measure(all.workers, clients, config, config.runs + 1, config.hold);
      report(all.workers, hold);
    }

    const o = summarize(results.ours);
    const b = summarize(results.bare);
    const figure = (...args) => comparison('bare ws', ...args);
    const memoryRatio =
      o.rssPerConnectionKiB !== null && b.rssPerConnectionKiB
        ? round(o.rssPerConnectionKiB / b.rssPerConnectionKiB, 3)
        : null;
    const cpuRatio =
      o.serverCpuMsPer1kConnections !== null && b.serverCpuMsPer1kConnections
        ? round(o.serverCpuMsPer1kConnections / b.serverCpuMsPer1kConnections, 3)
        : null;
    const figures = [
      figure('memory store: server memory per connection (RSS)', 'KiB', o.rssPerConnectionKiB, b.rssPerConnectionKiB, {
        ratio: memoryRatio,
        target: `ratio <= ${config.target}`,
        met: memoryRatio !== null && memoryRatio <= config.target,
      }),
      figure(
        'memory store: server CPU per 1,000 connections',
        'ms',
        o.serverCpuMsPer1kConnections,
        b.serverCpuMsPer1kConnections,
        {
          ratio: cpuRatio,
          target: `ratio <= ${config.cpuTarget}`,
          met: cpuRatio !== null && cpuRatio <= config.cpuTarget,
        },
      ),
      figure(
        `memory store: time to accept ${config.connections.toLocaleString('en-US')}`,
        'ms',
        o.acceptMs,
        b.acceptMs,
      ),
      figure(
        'memory store: server JS heap per connection (after GC)',
        'KiB',
        o.heapPerConnectionKiB,
        b.heapPerConnectionKiB,
      ),
    ];
    for (const side of list.filter((candidate) => candidate.target === 'redis' || candidate.target === 'workers')) {
      const r = summarize(results[side.target]);
      figures.push(
        figure(
          `${side.label}: server memory per connection (RSS, all processes)`,
          'KiB',
          r.rssPerConnectionKiB,
          b.rssPerConnectionKiB,
        ),
        figure(
          `${side.label}: server CPU per 1,000 connections (all processes)`,
          'ms',
          r.serverCpuMsPer1kConnections,
          b.serverCpuMsPer1kConnections,
        ),
        figure(
          `${side.label}: time to accept ${config.connections.toLocaleString('en-US')}`,
          'ms',
          r.acceptMs,
          b.acceptMs,
        ),
      );
    }
    for (const side of list) {
      const failed = summarize(results[side.target]).failed;
      figures.push({
        ...comparison(null, `${side.label}: failed connections (all runs)`, 'connections', failed, null),
        target: '0',
        met: failed === 0,
      });
    }
    if (hold) {
      figures.push(
        {
          ...comparison(
            null,
            `${all.workers.label}: idle connections held of ${config.hold.toLocaleString('en-US')}`,
            'connections',
            hold.held,
            null,
          ),
          target: `${config.hold}`,
          met: hold.failed === 0,
        },
        comparison(
          null,
          `${all.workers.label}: memory per connection at ${config.hold.toLocaleString('en-US')} (RSS, all processes)`,
          'KiB',
          hold.rssPerConnectionKiB,
          null,
        ),
        comparison(
          null,
          `${all.workers.label}: time to accept ${config.hold.toLocaleString('en-US')}`,
          'ms',
          hold.acceptMs,
          null,
        ),
      );
    }
    return {
      name: 'connections',
      figures,
      notes:
        `${config.connections} idle subscribers (reader key, connected → on-stream-post for one of ${config.streams} streams → sub_ack) ` +
        `from ${config.workers} client processes, at most ${config.concurrency} handshakes in flight in all; ` +
        `a fresh server process per run, ours with --rate-limit 0. ` +
        `Memory per connection = (RSS ${config.settleMs} ms after the last sub_ack, largest of ${config.samples} samples, ` +
        `− RSS of the idle server) / connections held; JS heap per connection the same after a forced full GC. ` +
        `Time to accept: first connect to last sub_ack. Failed = asked for − open at both ends after the settle (summed over runs). ` +
        `Median of ${config.runs} runs per side, in rotating order. ` +
        (redis
          ? `Redis sides: a redis-server of the benchmark's own, emptied before each; with --workers the RSS and CPU are summed over the primary and its workers, and held is counted by the clients alone (each worker's state counts only its own). `
          : ''),
      config,
      openFileLimits: {
        clients: clientOpenFiles,
        servers: Object.values(results)
          .flat()
          .map((r) => r.openFileLimit),
      },
      runs: results,
      hold,
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await redis?.stop();
    await seedFile.remove();
  }
}
