import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, openClient } from '../support/harness.js';
import { RedisServer } from '../support/redis-server.js';
import { jsonLines } from '../support/cli-output.js';
import { runToEnd, runCli } from '../support/cli.js';
import { until } from '../support/poll.js';

let redis: RedisServer;
let keyspaces = 0;

beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.stop());

/** Pids of a process's children (none once they have exited). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
}

function workersArgs(extra: string[] = []): string[] {
  return [
    'serve',
    '--port',
    '0',
    '--quiet',
    '--workers',
    '2',
    '--store',
    redis.url,
    '--redis-prefix',
    `workers${++keyspaces}:`,
    ...extra,
  ];
}

describe('serve --workers', () => {
  it('runs N processes on one port as one service: one listening line, every post to every subscriber once, a clean stop', async () => {
    const serve = runCli(workersArgs());
    const url = await serve.url();
    expect(childrenOf(serve.child.pid!)).toHaveLength(2);
    // Connections spread over the workers (round robin): each must still get every post.
    const readers = [];
    for (let i = 0; i < 4; i += 1) {
      const reader = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
      await reader.nextEvent('connected');
      expect((await reader.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 0 })).event).toBe('sub_ack');
      readers.push(reader);
    }
    const publisher = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.macroWire } });
    await publisher.nextEvent('connected');
    for (const text of ['one', 'two']) {
      const reply = await publisher.request('add-stream-post', {
        streamId: 'macro-wire',
        content: text,
        contentType: 'rawtext',
      });
      expect(reply.event).toBe('ack');
    }
    for (const reader of readers) {
      await reader.next((m) => m.event === 'stream.post.created' && m.data.text === 'two', 10_000);
      expect(reader.messages.filter((m) => m.event === 'stream.post.created').map((m) => m.data.text)).toEqual([
        'one',
        'two',
      ]);
    }
    expect(serve.lines.filter((line) => line.startsWith('listening on'))).toHaveLength(1);
    expect(serve.lines[0]).toMatch(/^listening on ws:\/\/127\.0\.0\.1:\d+$/);
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
    expect(childrenOf(serve.child.pid!)).toEqual([]);
  });

  it('replaces a worker that dies', async () => {
    const serve = runCli(workersArgs());
    const url = await serve.url();
    const [victim] = childrenOf(serve.child.pid!);
    process.kill(victim!, 'SIGKILL');
    await serve.waitFor(
      (out) => out.stderr.includes(`worker ${victim} stopped (SIGKILL); starting another`),
      'the replacement notice',
    );
    for (let i = 0; i < 4; i += 1) {
      const client = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
      await client.nextEvent('connected');
    }
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
  });

  it('says on every log line which worker wrote it, on stderr; stdout starts with the listening record', async () => {
    const serve = runCli(workersArgs(['--log-format', 'json']).filter((arg) => arg !== '--quiet'));
    const parse = (text: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const records = () => parse(serve.stderr);
    await serve.waitFor(
      () => parse(serve.stdout).some((record) => record['msg'] === 'listening'),
      'the listening record',
    );
    const startup = parse(serve.stdout);
    expect(startup[0]!['msg']).toBe('listening');
    const url = startup[0]!['url'] as string;
    // Round robin: four connections reach both workers.
    for (let i = 0; i < 4; i += 1) {
      const client = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
      await client.nextEvent('connected');
    }
    await serve.waitFor(
      () => records().filter((record) => record['conn'] !== undefined).length >= 4,
      'four connection log lines',
    );
    const workers = new Set(
      records()
        .filter((record) => record['conn'] !== undefined)
        .map((record) => record['worker']),
    );
    expect([...workers].sort()).toEqual([1, 2]);
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
  });

  it('answers for every worker: connections listed and distinct (w1-…, w2-…), faults and keep-alive rounds on all, a scoped fault on its connection alone', async () => {
    const serve = runCli(workersArgs());
    const url = await serve.url();
    const httpUrl = url.replace(/^ws/, 'http');
    // Round robin: four connections reach both workers.
    const clients = [];
    for (let i = 0; i < 4; i += 1) {
      const client = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
      await client.nextEvent('connected');
      expect((await client.request('on-stream-post', { streamIds: 'macro-wire', lastPosts: 0 })).event).toBe('sub_ack');
      clients.push(client);
    }
    const faults = async (...args: string[]) => {
      const result = await runToEnd(['faults', ...args, '--json', '--url', url]);
      expect(result.code, result.stderr).toBe(0);
      return jsonLines(result.stdout) as { id: string; applied?: number }[];
    };
    // Whichever worker takes the request, the answer is the whole service's.
    const listings = [];
    for (let i = 0; i < 3; i += 1) listings.push((await faults('connections')).map((connection) => connection.id));
    const ids = listings[0]!;
    expect(ids).toHaveLength(4);
    expect(new Set(ids).size).toBe(4);
    expect(new Set(ids.map((id) => /^w(\d+)-c\d+$/.exec(id)?.[1]))).toEqual(new Set(['1', '2']));
    for (const listing of listings) expect([...listing].sort()).toEqual([...ids].sort());

    const state = await (await fetch(`${httpUrl}/_admin/state`)).json();
    expect(state).toMatchObject({ connections: 4, subscriptions: 4 });
    const round = await fetch(`${httpUrl}/_admin/keep-alive`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await round.json()).toEqual({
      pinged: 4,
      terminated: 0,
      workers: [
        { id: 'w1', answered: true },
        { id: 'w2', answered: true },
      ],
    });

    // A fault kept in force is listed once, under one id, and cleared by it everywhere.
    const [silent] = await faults('add', 'go-silent', '--connection', ids[0]!);
    for (let i = 0; i < 3; i += 1) expect((await faults('list')).map((fault) => fault.id)).toEqual([silent!.id]);
    await faults('clear', silent!.id);
    expect(await faults('list')).toEqual([]);

    // A fault that acts once, scoped to one connection of worker 2: it lands there and nowhere else.
    const target = ids.find((id) => id.startsWith('w2-'))!;
    const [close] = await faults('add', 'close', '--connection', target);
    expect(close).toMatchObject({ type: 'close', applied: 1 });
    const closed = await Promise.race(clients.map((client) => client.closed));
    expect(closed.code).toBe(1012);
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
  });

  it('lives through workers killed (10 times) and stopped (once) under admin polling: every request answered, a stopped worker named, a dead one gone', async () => {
    const serve = runCli(workersArgs());
    const url = await serve.url();
    const httpUrl = url.replace(/^ws/, 'http');
    const primary = serve.child.pid!;
    interface Reply {
      status: number;
      body: { connections?: { id: string }[]; workers?: { id: string; answered: boolean }[] } & Record<string, any>;
    }
    let resets = 0;
    const STRANDED_MS = 10_000;
    let stranded = 0;
    /**
     * One admin request on a connection of its own. A connection that a killed worker held is
     * reset, or stranded: that request is made again (the killed worker's own loss); a refused connection
     * (no primary) is a failure.
     */
    const admin = async (method: string, path: string, body?: unknown): Promise<Reply> => {
      for (;;) {
        const answer = await new Promise<Reply | 'reset' | 'stranded'>((resolve, reject) => {
          const payload = body === undefined ? undefined : JSON.stringify(body);
          const req = request(`${httpUrl}${path}`, {
            method,
            agent: false,
            headers: payload === undefined ? {} : { 'content-type': 'application/json' },
          })
            .on('response', (response) => {
              let text = '';
              response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
              response.on('end', () =>
                resolve({ status: response.statusCode!, body: JSON.parse(text) as Reply['body'] }),
              );
              response.on('error', () => resolve('reset'));
            })
            .on('error', (error: NodeJS.ErrnoException) =>
              error.code === 'ECONNRESET' ? resolve('reset') : reject(error),
            )
            .end(payload);
          // node:cluster's round robin strands a connection it was handing to a worker as that
          // worker was killed: nobody answers it, and a client gives up on it and asks again.
          req.setTimeout(STRANDED_MS, () => {
            req.destroy();
            resolve('stranded');
          });
        });
        if (answer === 'reset') resets += 1;
        else if (answer === 'stranded') stranded += 1;
        else return answer;
      }
    };
    const workers = () => childrenOf(primary);
    /** Both workers listening and answering: a listing names two, each answered. */
    const bothAnswer = async () => {
      const reply = await admin('GET', '/_admin/connections');
      return reply.body.workers?.length === 2 && reply.body.workers.every((worker) => worker.answered);
    };

    // As the dashboard does, and more: the three endpoints polled in loops while workers die.
    let polling = true;
    const statuses: (number | string)[] = [];
    const loops = Array.from({ length: 9 }, async (_, i) => {
      const path = ['/_admin/connections', '/_admin/state', '/_admin/faults'][i % 3]!;
      while (polling) {
        const status = await admin('GET', path).then(
          (reply) => reply.status,
          (error: Error) => error.message,
        );
        statuses.push(status);
        if (typeof status === 'string') return;
      }
    });

    let deadGone = false;
    let scopedToDead: { applied?: number } | undefined;
    for (let kill = 1; kill <= 10; kill += 1) {
      await until(bothAnswer, 'both workers answering');
      // Connections on both workers, so a dead worker's are there to leave the listing.
      for (let i = 0; i < 2; i += 1) {
        const client = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
        await client.nextEvent('connected');
      }
      const before = (await admin('GET', '/_admin/connections')).body.connections!.map((each) => each.id);
      const victim = workers()[kill % 2]!;
      process.kill(victim, 'SIGKILL');
      await serve.waitFor(
        (out) => out.stderr.includes(`worker ${victim} stopped (SIGKILL)`),
        `the notice that worker ${victim} stopped`,
      );
      const after = (await admin('GET', '/_admin/connections')).body.connections!.map((each) => each.id);
      const dead = before.filter((id) => !after.includes(id));
      if (dead.length > 0) {
        deadGone = true;
        // A fault scoped to a connection of the dead worker lands nowhere.
        scopedToDead = (await admin('POST', '/_admin/faults', { type: 'close', scope: { connection: dead[0] } })).body[
          'fault'
        ];
      }
    }
    expect(deadGone).toBe(true);
    expect(scopedToDead).toMatchObject({ type: 'close', applied: 0 });

    // A stopped worker answers nothing: requests the other worker takes answer within the deadline, naming it.
    await until(bothAnswer, 'both workers answering');
    const stopped = workers()[0]!;
    process.kill(stopped, 'SIGSTOP');
    // Round robin hands two of four connections to the worker that runs: the first answer is its.
    const first = (path: string) => Promise.race(Array.from({ length: 4 }, () => admin('GET', path)));
    const listing = await first('/_admin/connections');
    expect(listing.body.workers).toHaveLength(2);
    const [silent] = listing.body.workers!.filter((worker) => !worker.answered);
    expect(silent).toBeDefined();
    for (const path of ['/_admin/state', '/_admin/faults']) {
      const reply = await first(path);
      expect(reply.status).toBe(200);
      expect(reply.body.workers).toContainEqual({ id: silent!.id, answered: false });
    }
    // Requests the stopped worker took are answered once it runs again.
    process.kill(stopped, 'SIGCONT');
    await until(bothAnswer, 'both workers answering again');
    polling = false;
    await Promise.all(loops);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(serve.child.exitCode).toBeNull();
    expect(workers()).toHaveLength(2);
    console.log(`admin requests answered: ${statuses.length}; made again: ${resets} reset, ${stranded} stranded`);
    serve.child.kill('SIGTERM');
    expect((await serve.exit()).code).toBe(0);
  }, 180_000);

  it('runs --exec once, with the service in its environment, and exits with its code', async () => {
    const serve = runCli(workersArgs(['--exec', 'test -n "$STREAM_POSTS_STREAM_KEY_MACRO_WIRE" && exit 7']));
    expect((await serve.exit()).code).toBe(7);
  });

  it('is refused with the memory store, saying why', async () => {
    const serve = runCli(['serve', '--port', '0', '--workers', '2']);
    expect((await serve.exit()).code).toBe(2);
    expect(serve.stderr).toContain('--store redis://');
  });
});
