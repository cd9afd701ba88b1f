import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inProcess } from '../support/in-process.js';
import { startServer, type StreamPostsServer } from '../../src/index.js';
import { ensureBuilt, finish } from '../support/cli.js';
import { startDeviantProxy, type Deviations, type DeviantProxy } from '../support/deviant-proxy.js';

interface CheckLine {
  kind: 'check';
  id: string;
  level: 'MUST' | 'SHOULD' | 'MAY';
  result: 'ok' | 'warn' | 'error' | 'skipped';
  reason?: string;
  service?: Record<string, unknown>;
  serve?: Record<string, unknown>;
  differs?: string[];
}
interface SummaryLine {
  kind: 'summary';
  sent: { frames: number; requests: number; posts: number };
}

const READER = 'sp_demo_reader_alice';
const STREAM_KEY = 'sp_demo_stream_macro_wire';
const opened: { close(): Promise<void> }[] = [];

async function doctor(url: string, args: string[] = [], key = READER) {
  const run = await finish(
    inProcess(['doctor', '--url', url, '--api-key', key, '--json', '--timeout', '3s', ...args]),
    120_000,
  );
  const lines = run.stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as CheckLine | SummaryLine);
  return {
    code: run.code,
    stderr: run.stderr,
    checks: lines.filter((line): line is CheckLine => line.kind === 'check'),
    summary: lines.find((line): line is SummaryLine => line.kind === 'summary'),
  };
}

const notOk = (checks: CheckLine[]) =>
  checks.filter((check) => check.result === 'warn' || check.result === 'error').map((check) => check.id);

async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<StreamPostsServer> {
  const server = await startServer({ host: '127.0.0.1', port: 0, ...options });
  opened.push(server);
  return server;
}

async function deviant(upstream: StreamPostsServer, deviations: Deviations): Promise<DeviantProxy> {
  const proxy = await startDeviantProxy(upstream.url, deviations);
  opened.push(proxy);
  return proxy;
}

/** Posts to the first of the reader's streams (the one the lastPosts checks read), each with a cashtag. */
async function fill(server: StreamPostsServer, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const answer = await fetch(`${server.httpUrl}/v1/streams/crypto-legal/post`, {
      method: 'POST',
      headers: { 'x-api-key': server.keys.streams['crypto-legal']!, 'content-type': 'application/json' },
      body: JSON.stringify({ content: `filler ${i} $BTC`, contentType: 'rawtext' }),
    });
    expect(answer.status).toBe(201);
  }
}

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await Promise.all(opened.splice(0).map((each) => each.close()));
});

describe('stream-posts doctor', { timeout: 120_000 }, () => {
  it.each([
    ['the hosted dialect as serve speaks it by default', {}],
    ['hidden posts pushed while hidden (--hosted-hidden-posts push)', { hostedHiddenPosts: 'push' as const }],
  ])('finds nothing wrong with serve: %s, writes included', async (_name, options) => {
    const server = await serve(options);
    const run = await doctor(server.url, ['--allow-writes', '--stream', 'macro-wire'], STREAM_KEY);
    expect(notOk(run.checks)).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.checks.filter((check) => check.result === 'ok').length).toBeGreaterThan(20);
    // Every line is one check, each with its id, level and result.
    for (const check of run.checks) {
      expect(check.id).toMatch(/^[a-z0-9.-]+$/);
      expect(['MUST', 'SHOULD', 'MAY']).toContain(check.level);
    }
    // Four marked test posts: the ack's, the idempotent pair's one, the hidden one and the upload's.
    expect(run.summary?.sent.posts).toBe(4);
  });

  it('writes nothing without --allow-writes, and counts what it sent', async () => {
    const server = await serve();
    const proxy = await deviant(server, {});
    const before = (await server.state()).posts;
    const run = await doctor(proxy.url);
    expect(run.code).toBe(0);
    expect(notOk(run.checks)).toEqual([]);
    expect(run.checks.filter((check) => check.id.startsWith('write.')).map((check) => check.result)).toEqual([
      'skipped',
      'skipped',
      'skipped',
      'skipped',
    ]);
    expect(proxy.publishes).toBe(0);
    expect(proxy.writes).toBe(0);
    expect((await server.state()).posts).toBe(before);
    expect(run.summary?.sent).toEqual({ frames: proxy.frames, requests: proxy.requests, posts: 0 });
  });

  it('reports a different close code for a bad key at its level (SHOULD), side by side, and exits 0', async () => {
    const proxy = await deviant(await serve(), { badKeyCloseCode: 1008 });
    const run = await doctor(proxy.url);
    expect(notOk(run.checks)).toEqual(['bad-key.close']);
    const check = run.checks.find((each) => each.id === 'bad-key.close')!;
    expect(check).toMatchObject({ level: 'SHOULD', result: 'warn', differs: ['closeCode'] });
    expect(check.service).toEqual({ closeCode: 1008 });
    expect(check.serve).toEqual({ closeCode: 4401 });
    expect(run.code).toBe(0);
  });

  it('reports a service without sub_ack on every check that waits for one, and exits 1', async () => {
    const proxy = await deviant(await serve(), { noSubAck: true });
    const run = await doctor(proxy.url);
    expect(notOk(run.checks).sort()).toEqual(
      [
        'subscribe.omitted',
        'subscribe.empty',
        'subscribe.listed',
        'last-posts.0',
        'last-posts.1',
        'last-posts.100',
        'url-form',
      ].sort(),
    );
    expect(run.checks.find((each) => each.id === 'subscribe.listed')).toMatchObject({
      level: 'MUST',
      result: 'error',
    });
    expect(run.code).toBe(1);
  });

  it('reports lastPosts capped at 50 (MUST) and 101 accepted (SHOULD), and exits 1', async () => {
    const server = await serve();
    await fill(server, 60);
    const proxy = await deviant(server, { lastPostsCap: 50 });
    const run = await doctor(proxy.url);
    expect(notOk(run.checks).sort()).toEqual(['last-posts.100', 'last-posts.101']);
    expect(run.checks.find((each) => each.id === 'last-posts.100')).toMatchObject({
      result: 'error',
      differs: ['allOnRecord'],
    });
    expect(run.checks.find((each) => each.id === 'last-posts.101')).toMatchObject({ level: 'SHOULD', result: 'warn' });
    expect(run.code).toBe(1);
  });

  it('reports a tree item without coin at its level (SHOULD)', async () => {
    const server = await serve();
    await fill(server, 2);
    const proxy = await deviant(server, { treeWithoutCoin: true });
    const run = await doctor(proxy.url);
    expect(notOk(run.checks)).toEqual(['tree-item.coin']);
    expect(run.checks.find((each) => each.id === 'tree-item.coin')).toMatchObject({
      level: 'SHOULD',
      result: 'warn',
      service: { coinWhenCashtag: false },
      serve: { coinWhenCashtag: true },
    });
    expect(run.code).toBe(0);
  });

  it('exits 3 when nothing answers', async () => {
    const server = await serve();
    const url = server.url;
    await server.close();
    opened.pop();
    const run = await finish(inProcess(['doctor', '--url', url, '--api-key', READER, '--timeout', '3s']), 60_000);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/cannot connect to http:\/\/127\.0\.0\.1:\d+/);
  });

  it('records the run with the key replaced, and the file holds no key in any form', async () => {
    const server = await serve();
    const file = join(tmpdir(), `doctor-${process.pid}-${Date.now()}.json`);
    const run = await finish(
      inProcess(['doctor', '--url', server.url, '--api-key', READER, '--timeout', '3s', '--record', file, '-q']),
      120_000,
    );
    expect(run.code).toBe(0);
    const text = await readFile(file, 'utf8');
    const recording = JSON.parse(text) as { meta: { format: string; upstream: string }; connections: unknown[] };
    expect(recording.meta).toMatchObject({ format: 'stream-posts-recording', upstream: server.url });
    expect(recording.connections.length).toBeGreaterThan(10);
    expect(text).toContain('<key-1>');
    for (const form of [READER, encodeURIComponent(READER), READER.replaceAll('_', '%5F')])
      expect(text).not.toContain(form);
  });
});
