import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEYS, openClient } from '../support/harness.js';
import { ROOT, runCli } from '../support/cli.js';

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist/cli.js'))) execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT });
});

describe('serve limit flags', () => {
  it('--max-connections-per-key and --max-subscriptions reach the server', async () => {
    const serve = runCli([
      'serve',
      '--port',
      '0',
      '--quiet',
      '--max-connections-per-key',
      '1',
      '--max-subscriptions',
      '1',
    ]);
    const url = `${await serve.url()}/v1/ws`;
    const first = await openClient(url, { headers: { 'x-api-key': KEYS.alice } });
    await first.nextEvent('connected');
    expect((await first.request('on-stream-post', { streamIds: 'macro-wire' })).event).toBe('sub_ack');
    expect((await first.request('on-stream-post', { streamIds: 'crypto-legal' })).data.code).toBe('limit-exceeded');

    const second = await openClient(url, { headers: { 'x-api-key': KEYS.alice } });
    expect((await second.nextEvent('error')).data.code).toBe('limit-exceeded');
    expect((await second.closed).code).toBe(1008);
  });

  it('refuses a malformed limit with exit 2', async () => {
    const serve = runCli(['serve', '--port', '0', '--max-pending-release-bytes', 'lots']);
    expect((await serve.exit()).code).toBe(2);
  });
});
