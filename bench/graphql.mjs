/**
 * bench/graphql — what one GraphQL operation at `/graphql` can cost the server's event
 * loop (docs/PROTOCOL.md B7: no operation holds it for more than about 20 ms).
 *
 * Processes: `stream-posts serve` (the built CLI, the demo seed, `--rate-limit 0
 * --key-rate-limit 0`) in its own process; this process speaks graphql-transport-ws to it
 * over bare `ws` sockets with the demo reader's key.
 *
 * Phase 1, one operation at a time on one socket: each shape is sent `warmup` times, then
 * `runs` times timed, each from its send to its answer (`complete` or `error`), and the
 * server process's CPU time over the timed runs (Linux /proc) is divided among them. A
 * subscription is never answered while it streams, so a subscription shape is followed on
 * the same socket by the plain query, whose answer comes once the server has handled both
 * (a connection's messages are handled in order), and is then completed. Baseline: the
 * plain query alone, `query { streams { id } }`, in the same run. The shapes are the most
 * expensive we found within the limits (500 tokens, 64 KiB, 8 deep, 8 aliases): a field
 * repeated with a sub-selection (validation compares each pair), repeated inline fragments,
 * directives (not repeatable: the answer is a validation error) and spreads, a repeated scalar field, a `streamIds` list as long as the tokens
 * allow, 64 KiB of `streamIds` in variables, and a query at the depth and alias limits;
 * then two the limits refuse: a field 20,000 times (59 KiB, over the tokens) and 30,000
 * times (293 KiB, over the size).
 *
 * Phase 2, the service's liveness under that load: `sockets` sockets each send the worst
 * accepted shape of phase 1 in a closed loop (the next once the last is answered) for
 * `seconds`, while this process asks `GET /healthz` in a closed loop and times each answer.
 * Baseline: the same with the plain query, in the same run. Reports the median and the
 * slowest `/healthz` answer. Then again with each socket sending `burst` operations at once
 * (the next burst once all are answered): they reach the server in a few chunks, and each
 * connection's messages are handled one per event-loop turn.
 *
 * Flags (through bench/run.mjs): --runs (50), --warmup (5), --seconds (3), --sockets (4),
 * --burst (20).
 */
import { WebSocket } from 'ws';
import { readFlags } from './lib/config.mjs';
import { startStreamPosts } from './lib/processes.mjs';
import { comparison, median, percentile, round } from './lib/stats.mjs';

const DEFAULTS = { runs: 50, warmup: 5, seconds: 3, sockets: 4, burst: 20 };
const KEY = 'sp_demo_reader_alice';
const STREAM = 'macro-wire';
/** Limits of src/server/graphql/document-limits.ts. */
const MAX_TOKENS = 500;
const MAX_BYTES = 64 * 1024;

/** `extensions.limit` of a refusal. */
const LIMITS = new Set(['size', 'tokens', 'depth', 'aliases']);

const PLAIN = 'query { streams { id } }';
const repeat = (count, text) => text.repeat(count);
/** `streamIds` named as often as 64 KiB of variables holds. */
const manyIds = Array.from({ length: Math.floor((MAX_BYTES - 200) / (STREAM.length + 3)) }, () => STREAM);

/** Shapes within the limits; `subscription` ones are followed by PLAIN (see above). */
const ACCEPTED = {
  'a field with a sub-selection, 124 times': `query { ${repeat(124, 'streams { id } ')}}`,
  'a field with two sub-fields, 99 times': `query { ${repeat(99, 'streams { id name } ')}}`,
  'an inline fragment, 55 times': `query { ${repeat(55, '... on Query { streams { id } } ')}}`,
  'a directive, 70 times': `query { streams ${repeat(70, '@include(if: true) ')}{ id } }`,
  'a fragment spread, 240 times': `query { ${repeat(240, '...F ')}} fragment F on Query { streams { id } }`,
  'subscription: a field 487 times': `subscription { streamPostCreated(streamIds: ["${STREAM}"]) { ${repeat(487, 'text ')}} }`,
  'subscription: 485 streamIds': `subscription { streamPostCreated(streamIds: [${repeat(485, `"${STREAM}" `)}]) { id } }`,
  'subscription: 64 KiB of streamIds in variables': {
    query: 'subscription ($ids: [ID!]) { streamPostCreated(streamIds: $ids, lastPosts: 100) { id } }',
    variables: { ids: manyIds },
  },
  'subscription: 8 deep, 8 aliases': `subscription { streamPostCreated(streamIds: ["${STREAM}"]) { ${repeat(6, '... on Post { ')}${Array.from({ length: 8 }, (_, i) => `t${i}: text`).join(' ')}${repeat(6, ' }')} } }`,
};
const REFUSED = {
  'a field 20,000 times (59 KiB, over the tokens)': `query { ${repeat(20_000, 'id ')}}`,
  'a field 30,000 times (293 KiB, over the size)': `subscription { streamPostCreated { ${repeat(30_000, 'createdAt ')}} }`,
};

const payloadOf = (shape) => (typeof shape === 'string' ? { query: shape } : shape);
const isSubscription = (shape) => payloadOf(shape).query.startsWith('subscription');

/** A graphql-transport-ws connection, acknowledged; `operation` resolves with the answer's type. */
async function openSocket(url) {
  const ws = new WebSocket(`${url}/graphql`, 'graphql-transport-ws');
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const waiting = new Map();
  let acked;
  const ack = new Promise((resolve) => (acked = resolve));
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString());
    if (message.type === 'connection_ack') return acked();
    if (message.type !== 'complete' && message.type !== 'error') return;
    const resolve = waiting.get(message.id);
    waiting.delete(message.id);
    resolve?.(message.type === 'error' ? (message.payload[0]?.extensions?.limit ?? 'invalid') : 'complete');
  });
  ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: KEY } }));
  await ack;
  let next = 0;
  const send = (payload) => {
    const id = String((next += 1));
    ws.send(JSON.stringify({ id, type: 'subscribe', payload }));
    return id;
  };
  return {
    ws,
    /** Sends the shape (a subscription then PLAIN, then completes it); resolves with the last answer. */
    operation(shape) {
      const subscription = isSubscription(shape) ? send(payloadOf(shape)) : undefined;
      const id = send(subscription === undefined ? payloadOf(shape) : { query: PLAIN });
      const answered = new Promise((resolve) => waiting.set(id, resolve));
      // A refused subscription is answered with `error`; a held one is ended here.
      if (subscription !== undefined) {
        const refused = new Promise((resolve) => waiting.set(subscription, resolve));
        return answered.then(async (answer) => {
          ws.send(JSON.stringify({ id: subscription, type: 'complete' }));
          waiting.delete(subscription);
          return (await Promise.race([refused, Promise.resolve(answer)])) ?? answer;
        });
      }
      return answered;
    },
  };
}

async function timeShape(server, socket, shape, { runs, warmup }) {
  let answer;
  for (let index = 0; index < warmup; index++) answer = await socket.operation(shape);
  const times = [];
  const cpuBefore = server.cpuTimeMs();
  for (let index = 0; index < runs; index++) {
    const started = performance.now();
    answer = await socket.operation(shape);
    times.push(performance.now() - started);
  }
  const cpuMs = (server.cpuTimeMs() - cpuBefore) / runs;
  times.sort((a, b) => a - b);
  return { medianMs: round(median(times)), maxMs: round(times.at(-1)), cpuMs: round(cpuMs), answer };
}

/** `/healthz` answer times while `sockets` sockets send `shape` in closed loops for `seconds`, `burst` at a time. */
async function healthUnderLoad(url, shape, { seconds, sockets: count }, burst = 1) {
  const sockets = await Promise.all(Array.from({ length: count }, () => openSocket(url)));
  const httpUrl = url.replace(/^ws/, 'http');
  let running = true;
  let operations = 0;
  const loads = sockets.map(async (socket) => {
    while (running) {
      await Promise.all(Array.from({ length: burst }, () => socket.operation(shape)));
      operations += burst;
    }
  });
  const times = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const response = await fetch(`${httpUrl}/healthz`);
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`/healthz answered ${response.status}`);
    times.push(performance.now() - started);
  }
  running = false;
  await Promise.all(loads);
  for (const socket of sockets) socket.ws.close();
  times.sort((a, b) => a - b);
  return {
    p50Ms: round(percentile(times, 50)),
    maxMs: round(times.at(-1)),
    answers: times.length,
    operationsPerSecond: round(operations / seconds),
  };
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true, zero: ['warmup'] });
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  for (const [name, shape] of Object.entries(ACCEPTED)) {
    const { query, variables } = payloadOf(shape);
    if (query.length + JSON.stringify(variables ?? null).length > MAX_BYTES)
      throw new Error(`"${name}" is over 64 KiB`);
    if (query.length > MAX_TOKENS * 80) throw new Error(`"${name}" cannot be within ${MAX_TOKENS} tokens`);
  }
  const server = await startStreamPosts(['--rate-limit', '0', '--key-rate-limit', '0']);
  try {
    const socket = await openSocket(server.url);
    const plain = await timeShape(server, socket, PLAIN, config);
    log(`  plain query: median ${plain.medianMs} ms, slowest ${plain.maxMs} ms, server CPU ${plain.cpuMs} ms`);
    const shapes = {};
    for (const [name, shape] of Object.entries({ ...ACCEPTED, ...REFUSED })) {
      shapes[name] = await timeShape(server, socket, shape, config);
      log(
        `  ${name}: median ${shapes[name].medianMs} ms, slowest ${shapes[name].maxMs} ms, server CPU ${shapes[name].cpuMs} ms (${shapes[name].answer})`,
      );
    }
    // Within the limits a shape is parsed and validated (a validation error is an answer too); past one it is not.
    for (const name of Object.keys(ACCEPTED)) {
      if (LIMITS.has(shapes[name].answer)) throw new Error(`"${name}" passed the ${shapes[name].answer} limit`);
    }
    for (const name of Object.keys(REFUSED)) {
      if (!LIMITS.has(shapes[name].answer)) throw new Error(`"${name}" passed the limits (${shapes[name].answer})`);
    }
    socket.ws.close();
    const accepted = Object.keys(ACCEPTED).map((name) => [name, shapes[name]]);
    const [worstName, worst] = accepted.reduce((a, b) => (b[1].medianMs > a[1].medianMs ? b : a));
    const [costliestName, costliest] = accepted.reduce((a, b) => (b[1].cpuMs > a[1].cpuMs ? b : a));
    const [slowestName, slowest] = accepted.reduce((a, b) => (b[1].maxMs > a[1].maxMs ? b : a));
    const baseHealth = await healthUnderLoad(server.url, PLAIN, config);
    log(`  /healthz under plain queries: p50 ${baseHealth.p50Ms} ms, slowest ${baseHealth.maxMs} ms`);
    const heavyHealth = await healthUnderLoad(server.url, ACCEPTED[worstName], config);
    log(`  /healthz under "${worstName}": p50 ${heavyHealth.p50Ms} ms, slowest ${heavyHealth.maxMs} ms`);
    const baseBursts = await healthUnderLoad(server.url, PLAIN, config, config.burst);
    log(`  /healthz under bursts of plain queries: p50 ${baseBursts.p50Ms} ms, slowest ${baseBursts.maxMs} ms`);
    const heavyBursts = await healthUnderLoad(server.url, ACCEPTED[worstName], config, config.burst);
    log(`  /healthz under bursts of "${worstName}": p50 ${heavyBursts.p50Ms} ms, slowest ${heavyBursts.maxMs} ms`);
    const refusedWorst = Object.entries(REFUSED).reduce((a, b) => (b[1].length > a[1].length ? b : a))[0];
    return {
      name: 'graphql',
      figures: [
        comparison(
          'plain query',
          `worst accepted operation, median round trip (${worstName})`,
          'ms',
          worst.medianMs,
          plain.medianMs,
          {
            target: '<= 20 ms',
            met: worst.medianMs <= 20,
          },
        ),
        // CPU time is what the event loop spends; unlike a round trip, others' work on the machine does not add to it.
        comparison(
          'plain query',
          `most server CPU time per accepted operation (${costliestName})`,
          'ms',
          costliest.cpuMs,
          plain.cpuMs,
          { target: '<= 20 ms', met: costliest.cpuMs <= 20 },
        ),
        comparison(
          'plain query',
          `slowest single accepted round trip (${slowestName})`,
          'ms',
          slowest.maxMs,
          plain.maxMs,
        ),
        comparison(
          'plain query',
          `refused: ${refusedWorst}, median round trip`,
          'ms',
          shapes[refusedWorst].medianMs,
          plain.medianMs,
        ),
        comparison(
          '/healthz under plain queries',
          `/healthz p50 under the worst accepted operation from ${config.sockets} sockets`,
          'ms',
          heavyHealth.p50Ms,
          baseHealth.p50Ms,
        ),
        comparison(
          '/healthz under plain queries',
          `/healthz slowest under the worst accepted operation from ${config.sockets} sockets`,
          'ms',
          heavyHealth.maxMs,
          baseHealth.maxMs,
          { target: '<= 100 ms', met: heavyHealth.maxMs <= 100 },
        ),
        comparison(
          '/healthz under bursts of plain queries',
          `/healthz p50 under bursts of ${config.burst} of the worst accepted operation from ${config.sockets} sockets`,
          'ms',
          heavyBursts.p50Ms,
          baseBursts.p50Ms,
        ),
        comparison(
          '/healthz under bursts of plain queries',
          `/healthz slowest under bursts of ${config.burst} of the worst accepted operation from ${config.sockets} sockets`,
          'ms',
          heavyBursts.maxMs,
          baseBursts.maxMs,
          { target: '<= 100 ms', met: heavyBursts.maxMs <= 100 },
        ),
      ],
      notes: [
        'Round trip: from sending an operation to its answer, one at a time on one socket; a subscription shape includes the plain query sent after it.',
        `Under load: ${heavyHealth.operationsPerSecond} worst operations/s (${baseHealth.operationsPerSecond} plain ones/s), ${heavyHealth.answers} /healthz answers in ${config.seconds} s.`,
      ],
      shapes,
      plain,
      health: { plain: baseHealth, worst: heavyHealth, plainBursts: baseBursts, worstBursts: heavyBursts },
      config,
    };
  } finally {
    await server.stop();
  }
}
