import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { client, ensureBuilt, finish } from '../support/cli.js';
import { KEYS, openClient } from '../support/harness.js';

/** Status of one request to the spawned serve, with headers fetch will not set (Host). */
function status(
  httpUrl: string,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<number> {
  const { hostname, port } = new URL(httpUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('serve: perimeter flags and environment', () => {
  it('--allowed-hosts, --allow-origin and STREAM_POSTS_ADMIN_TOKEN take effect, and the token is never printed', async () => {
    ensureBuilt();
    const token = 'e2e-admin-token-7f3a';
    const serve = client(
      ['serve', '--port', '0', '--allowed-hosts', 'dev.example', '--allow-origin', 'https://app.example.com'],
      {
        env: { STREAM_POSTS_ADMIN_TOKEN: token },
      },
    );
    const httpUrl = (await serve.url()).replace(/^ws/, 'http');
    const bearer = { authorization: `Bearer ${token}` };

    expect(await status(httpUrl, '/_admin/state', {})).toBe(401);
    expect(await status(httpUrl, '/_admin/state', bearer)).toBe(200);
    expect(await status(httpUrl, '/_admin/state', { ...bearer, host: 'dev.example:8787' })).toBe(200);
    expect(await status(httpUrl, '/_admin/state', { ...bearer, host: 'evil.example' })).toBe(403);
    expect(await status(httpUrl, '/healthz', { origin: 'https://app.example.com' })).toBe(200);
    expect(await status(httpUrl, '/healthz', { origin: 'https://evil.example' })).toBe(403);
    const json = { ...bearer, 'content-type': 'application/json' };
    expect(
      await status(httpUrl, '/_admin/clock', { ...bearer, 'content-type': 'text/plain' }, 'POST', '{"advanceMs":1}'),
    ).toBe(415);
    expect(await status(httpUrl, '/_admin/clock', json, 'POST', '{"advanceMs":1}')).toBe(200);

    // A client that puts the token and a terminal escape in a requestId.
    const alice = await openClient(`${httpUrl.replace(/^http/, 'ws')}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
    await alice.nextEvent('connected');
    alice.send({ event: 'on-stream-post', data: { streamIds: 'nope' }, requestId: `\u001b]0;PWNED\u0007${token}` });
    await alice.nextEvent('error');
    await serve.waitFor((out) => out.stderr.includes('PWNED'), 'the logged requestId');
    alice.close();

    serve.child.kill('SIGTERM');
    expect((await finish(serve)).code).toBe(0);
    expect(serve.stdout + serve.stderr).not.toContain(token);
    const logged = serve.stderr.split('\n').filter((line) => line.includes('PWNED'));
    expect(logged.length).toBeGreaterThan(0);
    for (const line of logged) expect(line).not.toMatch(/[\u0000-\u001f]/);
  });

  it('a bad --allow-origin is a usage error (exit 2)', async () => {
    ensureBuilt();
    const result = await finish(client(['serve', '--port', '0', '--allow-origin', 'not an origin']));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--allow-origin: allowed origin must be a URL');
  });

  it('a bad --admin-token is a usage error naming the flag, not the option of the API', async () => {
    ensureBuilt();
    const result = await finish(client(['serve', '--port', '0', '--admin-token', 'two words']));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--admin-token (or STREAM_POSTS_ADMIN_TOKEN) must be one line of printable ASCII');
    expect(result.stderr).not.toContain('two words');
  });
});
