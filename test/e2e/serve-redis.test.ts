import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../support/redis-server.js';
import { runCli } from '../support/cli.js';

const PASSWORD = 'redis-password-never-printed';
let redis: RedisServer;
let tmp: string;

beforeAll(async () => {
  redis = await RedisServer.start({ password: PASSWORD });
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-serve-redis-'));
});
afterAll(async () => {
  await redis.stop();
  await rm(tmp, { recursive: true, force: true });
});

describe('serve --store redis://', () => {
  it('serves from Redis and prints the store without its password, in text and JSON output', async () => {
    for (const format of ['text', 'json']) {
      const serve = runCli([
        'serve',
        '--port',
        '0',
        '--store',
        redis.url,
        '--redis-prefix',
        `e2e-${format}:`,
        '--log-format',
        format,
      ]);
      await serve.waitFor((out) => out.stdout.includes('127.0.0.1:' + redis.port), 'the store line');
      serve.child.kill('SIGTERM');
      expect((await serve.exit()).code).toBe(0);
      expect(serve.stdout + serve.stderr).not.toContain(PASSWORD);
      expect(serve.stdout).toContain(':redacted@127.0.0.1');
      // The log (the store's own lines included) is on stderr: stdout starts with where the service listens.
      const first = serve.lines[0]!;
      if (format === 'text') expect(first).toMatch(/^listening on ws:\/\/127\.0\.0\.1:\d+$/);
      else expect(JSON.parse(first)).toMatchObject({ msg: 'listening' });
      expect(serve.stdout).not.toContain('shutting down');
      expect(serve.stderr).toContain('shutting down');
    }
  });

  it('refuses a keyspace holding another seed, naming --reset-store, and replaces it with --reset-store', async () => {
    const prefix = 'e2e-seed:';
    const first = runCli(['serve', '--port', '0', '--quiet', '--store', redis.url, '--redis-prefix', prefix]);
    await first.url();
    first.child.kill('SIGTERM');
    await first.exit();
    const seed = join(tmp, 'seed.json');
    await writeFile(seed, JSON.stringify({ users: [{ id: 'u', name: 'U', readerKey: 'sp_e2e_other_reader' }] }));
    const refused = runCli([
      'serve',
      '--port',
      '0',
      '--quiet',
      '--seed',
      seed,
      '--store',
      redis.url,
      '--redis-prefix',
      prefix,
    ]);
    const exit = await refused.exit();
    expect(exit.code).toBe(1);
    expect(refused.stderr).toContain('--reset-store');
    expect(refused.stderr).not.toContain(PASSWORD);
    const replaced = runCli([
      'serve',
      '--port',
      '0',
      '--quiet',
      '--seed',
      seed,
      '--store',
      redis.url,
      '--redis-prefix',
      prefix,
      '--reset-store',
    ]);
    await replaced.url();
    replaced.child.kill('SIGTERM');
    expect((await replaced.exit()).code).toBe(0);
  });

  it('names the flag for a bad store URL and for --reset-store without Redis, and an unreachable Redis without its password', async () => {
    const bad = runCli(['serve', '--port', '0', '--store', 'http://127.0.0.1:1']);
    expect((await bad.exit()).code).toBe(2);
    expect(bad.stderr).toContain('--store');
    const unreachable = runCli(['serve', '--port', '0', '--store', `redis://:${PASSWORD}@127.0.0.1:1`]);
    expect((await unreachable.exit()).code).toBe(1);
    expect(unreachable.stderr).toContain('cannot use the store at redis://:redacted@127.0.0.1:1');
    expect(unreachable.stdout + unreachable.stderr).not.toContain(PASSWORD);
    const reset = runCli(['serve', '--port', '0', '--reset-store']);
    expect((await reset.exit()).code).toBe(2);
    expect(reset.stderr).toContain('--reset-store');
    const eviction = runCli(['serve', '--port', '0', '--allow-eviction']);
    expect((await eviction.exit()).code).toBe(2);
    expect(eviction.stderr).toContain('--allow-eviction');
  });

  it('refuses (exit 2) a Redis that may evict keys, naming the policy and the fix, unless --allow-eviction; warns when it does not persist', async () => {
    const evicting = await RedisServer.start({ config: ['--maxmemory-policy', 'allkeys-lru'] });
    try {
      const args = ['serve', '--port', '0', '--store', evicting.url, '--redis-prefix', 'e2e-evict:'];
      for (const workers of ['1', '2']) {
        const refused = runCli([...args, '--workers', workers]);
        expect((await refused.exit()).code).toBe(2);
        expect(refused.stderr).toContain('allkeys-lru');
        expect(refused.stderr).toContain('CONFIG SET maxmemory-policy noeviction');
        expect(refused.stderr).toContain('--allow-eviction');
      }
      const allowed = runCli([...args, '--allow-eviction']);
      await allowed.waitFor((out) => /Redis persistence is off/.test(out.stderr), 'the persistence warning');
      allowed.child.kill('SIGTERM');
      expect((await allowed.exit()).code).toBe(0);
      expect(allowed.stderr).toMatch(/Redis may evict keys/);
      expect(allowed.stderr.match(/Redis persistence is off/g)).toHaveLength(1);
    } finally {
      await evicting.stop();
    }
  });
});
