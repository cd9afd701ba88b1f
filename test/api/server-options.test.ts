import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isOptionError, startServer, StreamPostsError } from '../../src/index.js';
import { client } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('startServer takes every serve option', () => {
  it('caps: maxPendingReleases holds back a second hidden post of a stream', async () => {
    const srv = await server({ maxPendingReleases: 1 });
    const owner = await client({ url: srv.url, apiKey: srv.keys.streams['macro-wire']! });
    const releaseAt = Date.now() + 3_600_000;
    await owner.publish({ streamId: 'macro-wire', content: 'first', releaseAt });
    const error = await owner
      .publish({ streamId: 'macro-wire', content: 'second', releaseAt })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('limit-exceeded');
  });

  it('maxConnectionsPerKey: a second connection of the key is refused', async () => {
    const srv = await server({ maxConnectionsPerKey: 1 });
    const apiKey = srv.keys.readers['alice']!;
    await client({ url: srv.url, apiKey });
    const error = await client({ url: srv.url, apiKey }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamPostsError);
    expect((error as StreamPostsError).code).toBe('limit-exceeded');
  });

  it('adminToken: the HTTP admin endpoints need it as a bearer token', async () => {
    const srv = await server({ adminToken: 'tok-123456' });
    expect((await fetch(`${srv.adminUrl}/state`)).status).toBe(401);
    expect((await fetch(`${srv.adminUrl}/state`, { headers: { authorization: 'Bearer tok-123456' } })).status).toBe(
      200,
    );
  });

  it('allowedHosts: a Host not in the list is refused, one in it accepted', async () => {
    const srv = await server({ allowedHosts: ['api.example.test'] });
    // fetch() sets Host itself; a raw request can name another.
    const status = (host: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: srv.port,
            path: '/v1/streams',
            headers: { host, 'x-api-key': srv.keys.readers['alice']! },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode);
          },
        );
        req.on('error', reject).end();
      });
    expect(await status('evil.example.test')).toBe(403);
    expect(await status('api.example.test')).toBe(200);
  });

  it('accepts the rest with their types, and names the option of a bad value', async () => {
    const srv = await server({
      keyRateLimit: 0,
      maxSubscriptions: 2,
      maxPendingCommands: 10,
      maxPendingReleaseBytes: 0,
      maxIdempotencyKeys: 5,
      maxIdempotencyBytes: 1024,
      allowedOrigins: ['https://app.example.test'],
      bodyTimeoutMs: 5000,
      headersTimeoutMs: 5000,
    });
    expect(srv.port).toBeGreaterThan(0);
    await expect(server({ maxSubscriptions: -1 })).rejects.toThrow(/^maxSubscriptions must be an integer/);
    await expect(server({ maxPendingCommands: 0 })).rejects.toThrow(RangeError);
    await expect(server({ bodyTimeoutMs: '5s' as unknown as number })).rejects.toThrow(
      /bodyTimeoutMs must be a number/,
    );
    await expect(server({ adminToken: 'has space' })).rejects.toThrow(/^adminToken/);
    await expect(server({ allowedHosts: 'any' as 'all' })).rejects.toThrow(
      /allowedHosts must be an array of strings or 'all'/,
    );
    await expect(server({ allowedOrigins: ['not a url'] })).rejects.toThrow(/^allowedOrigins/);
    await expect(server({ maxSubscriptionsPerConnection: 1 } as never)).rejects.toThrow(
      /unknown option "maxSubscriptionsPerConnection"/,
    );
  });

  it('names the option of a bad value in a field and its code: a RangeError for a number out of range, else a TypeError', async () => {
    const refusal = (options: Parameters<typeof server>[0]) => server(options).catch((error: unknown) => error);
    const cases: [Parameters<typeof server>[0], ErrorConstructor, string][] = [
      [{ adminToken: 'has space' }, TypeError, 'adminToken'],
      [{ adminToken: 7 as unknown as string }, TypeError, 'adminToken'],
      [{ hostedHiddenPosts: 'later' as 'push' }, TypeError, 'hostedHiddenPosts'],
      [{ store: 'http://127.0.0.1:1' }, TypeError, 'store'],
      [{ resetStore: true }, TypeError, 'resetStore'],
      [{ tls: { cert: 'not pem', key: 'not pem' } }, TypeError, 'tls'],
      [{ maxSubscriptions: -1 }, RangeError, 'maxSubscriptions'],
      [{ keepAliveMs: '5s' as unknown as number }, TypeError, 'keepAliveMs'],
      [{ allowedOrigins: ['not a url'] }, TypeError, 'allowedOrigins'],
      [{ state: 'x.json', store: 'redis://127.0.0.1:1' }, TypeError, 'state'],
    ];
    for (const [options, kind, option] of cases) {
      const error = await refusal(options);
      expect(error).toBeInstanceOf(kind);
      expect(error).toMatchObject({ code: 'bad-option', option });
      // The exported guard narrows it, so a caller under `strict` reads `option` without a cast.
      if (!isOptionError(error)) throw new Error('isOptionError refused a bad option');
      const named: string = error.option;
      expect(named).toBe(option);
    }
    expect(isOptionError(new TypeError('another'))).toBe(false);
  });

  it('checks each option against its row of the table: the type, the range, the rule, in words naming it', async () => {
    // startServer itself: the harness's defaults are no options of a recording proxy.
    const refusal = (options: unknown) =>
      startServer(options as never).then(
        (started) => started.close(),
        (error: unknown) => error,
      );
    const cases: [unknown, ErrorConstructor, string, RegExp][] = [
      [{ port: Number.NaN }, RangeError, 'port', /^port must be an integer from 0 to 65535, got NaN$/],
      [{ port: 80.5 }, RangeError, 'port', /^port must be an integer from 0 to 65535, got 80.5$/],
      [{ port: '80' }, TypeError, 'port', /^port must be a number, got string$/],
      [{ seed: 5 }, TypeError, 'seed', /^seed must be a seed object or the path of a seed file, got number$/],
      [{ logger: {} }, TypeError, 'logger', /^logger must be an object with a log\(level, message, fields\) method$/],
      [{ replay: 'r.json', replaySpeed: 'fast' }, RangeError, 'replaySpeed', /^replaySpeed must be 'recorded', 'max'/],
      [{ replaySpeed: 2 }, TypeError, 'replaySpeed', /^replaySpeed needs replay/],
      [{ replay: 'r.json', replayIgnore: [' '] }, TypeError, 'replayIgnore', /a field name cannot be empty/],
      [
        { hostedHiddenPosts: 3 },
        TypeError,
        'hostedHiddenPosts',
        /^hostedHiddenPosts must be 'at-release' or 'push', got number$/,
      ],
      [
        { record: 'x.json', upstream: 'ws://127.0.0.1:1', recordRedact: ['author'] },
        TypeError,
        'recordRedact',
        /JSONPath/,
      ],
      [
        { record: 'x.json', upstream: 'ws://127.0.0.1:1', onProxiedFrame: 1 },
        TypeError,
        'onProxiedFrame',
        /must be a function/,
      ],
      [{ recordMaxBytes: 5 }, TypeError, 'recordMaxBytes', /^recordMaxBytes needs record/],
    ];
    for (const [options, kind, option, words] of cases) {
      const error = await refusal(options);
      expect(error, JSON.stringify(options)).toBeInstanceOf(kind);
      expect(error).toMatchObject({ code: 'bad-option', option, message: expect.stringMatching(words) });
    }
  });
});
