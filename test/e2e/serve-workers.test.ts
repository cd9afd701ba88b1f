import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, openClient } from '../support/harness.js';
import { RedisServer } from '../support/redis-server.js';
import { jsonLines } from '../support/cli-output.js';
import { runToEnd, runCli } from '../support/cli.js';

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
    expect(await round.json()).toEqual({ pinged: 4, terminated: 0 });

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
