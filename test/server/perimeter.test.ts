import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type LogFormat } from '../../src/server/logger.js';
import type { StartServerOptions, StreamPostsServer } from '../../src/index.js';
import { Arrivals } from '../support/arrivals.js';
import { adminState, connectAs, http, KEYS, startTestServer } from '../support/harness.js';

interface Reply {
  status: number;
  body: any;
}

interface RawOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as it is; `undefined` sends no body. */
  body?: string;
}

/** One HTTP request with headers fetch will not send (Host, Origin, none at all). */
function raw(server: StreamPostsServer, path: string, options: RawOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, path, method: options.method ?? 'GET', headers: options.headers },
      (res) => resolve(readReply(res)),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

async function readReply(res: IncomingMessage): Promise<Reply> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString();
  return { status: res.statusCode ?? 0, body: text === '' ? undefined : JSON.parse(text) };
}

/** A WebSocket upgrade: the refusal's status and body, or `101` when it was accepted. */
function upgrade(server: StreamPostsServer, headers: Record<string, string>, path = '/v1/ws'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      path,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
        'x-api-key': KEYS.alice,
        ...headers,
      },
    });
    req.on('response', (res) => resolve(readReply(res)));
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, body: undefined });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A log written by the server's own line logger into memory, and a way to wait for a line. */
function capturedLog(format: LogFormat = 'text') {
  const arrivals = new Arrivals();
  let text = '';
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      arrivals.notify();
      done();
    },
  });
  return {
    logger: createLogger(format, out),
    get text() {
      return text;
    },
    async waitFor(fragment: string): Promise<void> {
      await arrivals.until(
        () => text.includes(fragment),
        5000,
        () => new Error(`no log line with ${fragment}; log:\n${text}`),
      );
    },
  };
}

const JSON_POST = { method: 'POST', headers: { 'content-type': 'application/json' } };

describe('Host check', () => {
  it.each(['evil.example', 'evil.example:8787', 'localhost.evil.example', '127.0.0.1.nip.io'])(
    'refuses Host %s with 403 on HTTP and on upgrades',
    async (host) => {
      const server = await startTestServer();
      const reply = await raw(server, '/_admin/state', { headers: { host } });
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('forbidden');
      expect((await raw(server, '/v1/streams', { headers: { host, 'x-api-key': KEYS.alice } })).status).toBe(403);
      const refused = await upgrade(server, { host });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('forbidden');
      expect((await server.state()).connections).toBe(0);
    },
  );

  it.each([
    'localhost:8787',
    'LOCALHOST',
    'app.localhost:5173',
    '127.0.0.1',
    '127.1.2.3:80',
    '[::1]:8787',
    '192.168.1.20:8787',
    '[fe80::1]',
  ])('accepts Host %s (loopback names and IP addresses)', async (host) => {
    const server = await startTestServer();
    expect((await raw(server, '/_admin/state', { headers: { host } })).status).toBe(200);
    expect((await upgrade(server, { host })).status).toBe(101);
  });

  it('accepts a request without Host (HTTP/1.0)', async () => {
    const server = await startTestServer();
    const socket = connect(server.port, '127.0.0.1');
    socket.end('GET /healthz HTTP/1.0\r\n\r\n');
    let response = '';
    for await (const chunk of socket) response += chunk.toString();
    expect(response).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('accepts names added with allowedHosts (with or without a port); a leading dot allows subdomains', async () => {
    const server = await startTestServer({ allowedHosts: ['dev.example', '.example.org', 'Box.Lan:8787'] });
    for (const host of ['dev.example:8787', 'example.org', 'api.example.org', 'box.lan:9000']) {
      expect((await raw(server, '/healthz', { headers: { host } })).status).toBe(200);
    }
    expect((await raw(server, '/healthz', { headers: { host: 'other.example' } })).status).toBe(403);
  });

  it("allowedHosts 'all' turns the check off", async () => {
    const server = await startTestServer({ allowedHosts: 'all' });
    expect((await raw(server, '/_admin/state', { headers: { host: 'anything.example' } })).status).toBe(200);
  });
});

describe('Origin check', () => {
  it.each(['https://evil.example', 'http://localhost.evil.example', 'null'])(
    'refuses Origin %s on upgrades, REST and admin',
    async (origin) => {
      const server = await startTestServer();
      const refused = await upgrade(server, { origin });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('forbidden');
      expect((await raw(server, '/v1/streams', { headers: { origin, 'x-api-key': KEYS.alice } })).status).toBe(403);
      const advance = await raw(server, '/_admin/clock', {
        ...JSON_POST,
        headers: { ...JSON_POST.headers, origin },
        body: '{"advanceMs":3600000}',
      });
      expect(advance.status).toBe(403);
      expect((await adminState(server)).clockOffsetMs).toBe(0);
    },
  );

  it.each(['http://localhost:5173', 'http://127.0.0.1:3000', 'https://app.localhost', 'http://[::1]:8080'])(
    'accepts the loopback Origin %s (browser apps under test)',
    async (origin) => {
      const server = await startTestServer();
      expect((await upgrade(server, { origin })).status).toBe(101);
      const alice = await connectAs(server, KEYS.alice, { wsOptions: { origin } });
      expect((await alice.request('on-stream-post', {})).event).toBe('sub_ack');
      expect((await raw(server, '/v1/streams', { headers: { origin, 'x-api-key': KEYS.alice } })).status).toBe(200);
    },
  );

  it('accepts origins listed in allowedOrigins, and only those', async () => {
    const server = await startTestServer({ allowedOrigins: ['https://app.example.com'] });
    expect((await upgrade(server, { origin: 'https://app.example.com' })).status).toBe(101);
    expect((await upgrade(server, { origin: 'https://app.example.com:8443' })).status).toBe(403);
    expect((await upgrade(server, { origin: 'http://app.example.com' })).status).toBe(403);
  });

  it('a request without Origin (any non-browser client) is accepted', async () => {
    const server = await startTestServer();
    expect((await upgrade(server, {})).status).toBe(101);
  });
});

describe('admin requests', () => {
  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined])(
    'a POST with content-type %s gets 415 and changes nothing',
    async (type) => {
      const server = await startTestServer();
      const headers: Record<string, string> = type === undefined ? {} : { 'content-type': type };
      const reply = await raw(server, '/_admin/clock', { method: 'POST', headers, body: '{"advanceMs":3600000}' });
      expect(reply.status).toBe(415);
      expect((await adminState(server)).clockOffsetMs).toBe(0);
    },
  );

  it('with adminToken, needs Authorization: Bearer <token>', async () => {
    const log = capturedLog();
    const token = 'admin-token-0123456789';
    const server = await startTestServer({ adminToken: token, logger: log.logger });
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`, `Bearer ${token}x`]) {
      const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
      expect((await raw(server, '/_admin/state', { headers })).status).toBe(401);
      const advance = await raw(server, '/_admin/clock', {
        ...JSON_POST,
        headers: { ...JSON_POST.headers, ...headers },
        body: '{"advanceMs":1}',
      });
      expect(advance.status).toBe(401);
    }
    expect((await raw(server, '/_admin/state', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const advance = await raw(server, '/_admin/clock', {
      ...JSON_POST,
      headers: { ...JSON_POST.headers, authorization: `bearer ${token}` },
      body: '{"advanceMs":1}',
    });
    expect(advance.status).toBe(200);
    await log.waitFor('clock advanced');
    expect(log.text).not.toContain(token);
  });

  it('adminToken turns admin on when bound to a non-loopback address', async () => {
    const server = await startTestServer({ host: '0.0.0.0', adminToken: 'token-for-0000' });
    expect(server.adminUrl).toBeDefined();
    expect((await raw(server, '/_admin/state')).status).toBe(401);
  });

  it('a body over the limit gets 413', async () => {
    const server = await startTestServer();
    const reply = await raw(server, '/_admin/clock', {
      ...JSON_POST,
      body: `{"advanceMs":1,"pad":"${'x'.repeat(8192)}"}`,
    });
    expect(reply.status).toBe(413);
    expect((await adminState(server)).clockOffsetMs).toBe(0);
  });
});

describe('request bodies', () => {
  /** Sends headers and part of a body, then nothing more; resolves with the server's answer. */
  function unfinishedBody(server: StreamPostsServer, path: string, headers: Record<string, string>): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path,
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'content-length': '100' },
        },
        (res) => resolve(readReply(res)),
      );
      req.on('error', reject);
      req.write('{"advanceMs":');
    });
  }

  it.each([
    ['admin', '/_admin/clock', {}],
    ['REST publish', '/v1/streams/macro-wire/post', { 'x-api-key': KEYS.macroWire }],
  ])('an unfinished %s body is answered 408 after bodyTimeoutMs', async (_name, path, headers) => {
    const log = capturedLog();
    const server = await startTestServer({ bodyTimeoutMs: 50, logger: log.logger });
    const reply = await unfinishedBody(server, path, headers);
    expect(reply.status).toBe(408);
    expect(log.text).not.toContain('internal error');
  });

  it('headers that never finish are answered 408 after headersTimeoutMs', async () => {
    const server = await startTestServer({ headersTimeoutMs: 50 });
    const socket = connect(server.port, '127.0.0.1');
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    let response = '';
    for await (const chunk of socket) response += chunk.toString();
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a body the client abandons is not logged as an internal error', async () => {
    const log = capturedLog();
    const server = await startTestServer({ logger: log.logger });
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      path: '/_admin/clock',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '100' },
    });
    req.on('error', () => {});
    req.write('{"advanceMs":', () => req.destroy());
    await log.waitFor('request body not read');
    expect(log.text).not.toContain('internal error');
    expect(log.text).not.toContain(' error ');
  });
});

const HOSTILE = 'x\u001b]0;PWNED\u0007\u001b[2J\u009b31m\u202eevil\u2066\u200b\u2028';
const RAW_CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/;

async function logHostileRequestId(options: StartServerOptions, requestId: string): Promise<void> {
  const server = await startTestServer(options);
  const alice = await connectAs(server, KEYS.alice);
  alice.send({ event: 'on-stream-post', data: { streamIds: 'no-such-stream' }, requestId });
  await alice.next((message) => message.event === 'error');
}

describe('the log', () => {
  it('escapes control, C1, bidi and zero-width characters a client sends (text format)', async () => {
    const log = capturedLog('text');
    await logHostileRequestId({ logger: log.logger }, HOSTILE);
    await log.waitFor('command failed');
    expect(log.text).not.toMatch(RAW_CONTROLS);
    expect(log.text).toContain('PWNED');
  });

  it('escapes them in the JSON format too, and each line still parses to the value sent', async () => {
    const log = capturedLog('json');
    await logHostileRequestId({ logger: log.logger }, HOSTILE);
    await log.waitFor('command failed');
    expect(log.text).not.toMatch(RAW_CONTROLS);
    const lines = log.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.find((line) => line.msg === 'command failed')?.requestId).toBe(HOSTILE);
  });

  it('never writes a known key, wherever a client puts it', async () => {
    const log = capturedLog('text');
    const adminToken = 'the-admin-token-42';
    const server = await startTestServer({ logger: log.logger, adminToken });
    const alice = await connectAs(server, KEYS.alice);
    alice.send({
      event: 'on-stream-post',
      data: { streamIds: `macro-wire,${KEYS.bob}` },
      requestId: `id-${KEYS.macroWire}-${adminToken}`,
    });
    await alice.next((message) => message.event === 'error');
    alice.send({ event: 'on-stream-post', data: { streamIds: KEYS.cryptoLegal }, requestId: KEYS.whaleAlerts });
    await alice.next((message) => message.event === 'error');
    await http(server, 'GET', `/v1/streams/${KEYS.newsdesk}/posts`, { key: KEYS.alice });
    const unknown = await upgrade(server, {}, `/v1/ws/${KEYS.bob}`);
    expect(unknown.status).toBe(404);
    // Escaped, in any case, or twice: the same key to whoever reads the address.
    for (const escaped of [
      KEYS.bob.replaceAll('_', '%5F'),
      KEYS.bob.replaceAll('_', '%5f'),
      KEYS.bob.replace('_', '%255F'),
    ]) {
      expect((await upgrade(server, {}, `/v1/ws/${escaped}`)).status).toBe(404);
      await http(server, 'GET', `/v1/streams/${escaped}/posts`, { key: KEYS.alice });
    }
    await log.waitFor('upgrade to unknown path');
    await log.waitFor('request failed');
    expect(log.text).toContain('[key]');
    for (const secret of [...Object.values(KEYS), adminToken]) expect(log.text).not.toContain(secret);
    expect(log.text).not.toMatch(/reader(?:_|%5F|%255F)bob/i);
    expect(log.text.match(/\/v1\/ws\/\[key\]/g)).toHaveLength(4);
  });
});
