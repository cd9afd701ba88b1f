import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { client, ensureBuilt } from '../support/cli.js';
import { runInProcess } from '../support/in-process.js';
import { KEYS, openClient } from '../support/harness.js';
import { startServe } from '../support/serve.js';

beforeAll(ensureBuilt);

/** Every byte of `text` percent-encoded, hex digits alternately upper and lower case. */
function encodeEveryByte(text: string): string {
  return [...Buffer.from(text)]
    .map((byte, i) => {
      const hex = byte.toString(16).padStart(2, '0');
      return `%${i % 2 === 0 ? hex.toUpperCase() : hex}`;
    })
    .join('');
}

/** A key in every form a client can write it in a path or a query: the server reads each as the key. */
function formsOf(key: string): Record<string, string> {
  return {
    plain: key,
    'one escape': key.replace('_', '%5F'),
    'lower-case escapes': key.replaceAll('_', '%5f'),
    'mixed-case escapes': key.replace('_', '%5F').replace('_', '%5f'),
    'every byte': encodeEveryByte(key),
    'encoded twice': key.replaceAll('_', '%255F'),
  };
}
const FORMS = formsOf(KEYS.bob);

/** `text` with its percent escapes decoded as often as they were applied. */
function decodedFully(text: string): string {
  let out = text;
  for (let before = ''; before !== out;) {
    before = out;
    out = out.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }
  return out;
}

/** The status of a raw HTTP request (an upgrade, or one with a Host header fetch would not send). */
function rawStatus(url: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve(101);
    });
    req.on('error', reject);
    req.end();
  });
}

const UPGRADE = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
};

describe("serve's log never holds a key, however the client wrote it", () => {
  it('request and upgrade logs, command failures, refusals and admin events write the marker instead', async () => {
    const serve = client(['serve', '--port', '0', '-v']);
    const url = await serve.url();
    const httpUrl = url.replace(/^ws/, 'http');
    const alice = await openClient(`${url}/v1/ws`, { headers: { 'x-api-key': KEYS.alice } });
    await alice.nextEvent('connected');
    /** Each tag is logged next to a form of the key: `tag[key]` must be in the log. */
    const tags: string[] = [];

    for (const [index, form] of Object.values(FORMS).entries()) {
      const tag = (path: string) => {
        const name = `t${index}${path}-`;
        tags.push(name);
        return name;
      };
      // The upgrade log: an unknown address.
      expect(await rawStatus(httpUrl, `/v1/ws/${tag('u')}${form}`, UPGRADE)).toBe(404);
      // REST: a failed request (warn) and every request (debug), by path.
      const rest = await fetch(`${httpUrl}/v1/streams/${tag('r')}${form}/posts`, {
        headers: { 'x-api-key': KEYS.alice },
      });
      expect(rest.status).toBe(404);
      // The perimeter's refusal of a foreign Host, on a request and on an upgrade.
      expect(await rawStatus(httpUrl, `/v1/streams/${tag('h')}${form}`, { host: 'evil.example' })).toBe(403);
      expect(await rawStatus(httpUrl, `/v1/ws/${tag('hu')}${form}`, { ...UPGRADE, host: 'evil.example' })).toBe(403);
      // A request whose body is too large: logged with its query, where the key may be under any name.
      const big = await fetch(`${httpUrl}/v1/streams/macro-wire/post?${tag('q')}=${form}&api%4Bey=${form}`, {
        method: 'POST',
        headers: { 'x-api-key': KEYS.macroWire, 'content-type': 'application/json' },
        body: 'x'.repeat(2 * 1024 * 1024),
      }).catch(() => undefined);
      if (big !== undefined) expect(big.status).toBe(413);
      // A command the service refuses: its requestId and its reason (naming the streams).
      alice.send({
        event: 'on-stream-post',
        data: { streamIds: `${tag('s')}${form}` },
        requestId: `${tag('i')}${form}`,
      });
      expect((await alice.next((message) => message.event === 'error')).data.code).toBe('not-found');
      // The URL form, whose query is the command's arguments.
      const urlForm = await openClient(`${url}/v1/ws/on-stream-post?streamIds=${tag('w')}${form}`, {
        headers: { 'x-api-key': KEYS.alice },
      });
      expect((await urlForm.next((message) => message.event === 'error')).data.code).toBe('not-found');
      // An admin event: a fault scoped by what the admin typed.
      const fault = await fetch(`${httpUrl}/_admin/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'pause-deliveries', scope: { user: `${tag('f')}${form}` } }),
      });
      expect(fault.status).toBe(200);
    }
    const last = tags.at(-1)!;
    await serve.waitFor((out) => out.stderr.includes(`${last}[key]`), `the line of ${last}`);
    await serve.waitFor((out) => out.stderr.includes('debug rest request'), 'the debug lines');

    // The banner (stdout) lists the seed's keys on purpose (the operator's own); the log is stderr.
    const log = serve.stderr;
    expect(serve.stdout).not.toMatch(/^\d{4}-\d\d-\d\dT/m);
    expect(log).toMatch(/fault set/);
    for (const tag of tags) {
      // In a query, the key under any other name is a known key; under a key's name, whatever it is.
      expect(log).toContain(tag.endsWith('q-') ? `${tag}=[key]&api%4Bey=[redacted]` : `${tag}[key]`);
    }
    for (const text of [log, decodedFully(log)]) {
      for (const key of Object.values(KEYS)) expect(text).not.toContain(key);
      expect(text).not.toMatch(/reader.{0,8}bob/);
    }
  });
});

describe("the CLI's status and error lines never hold its key, however the URL wrote it", () => {
  const key = KEYS.macroWire;
  it.each(Object.entries(formsOf(key)))('%s', async (_name, inPath) => {
    const serve = await startServe();
    const common = ['--url', `${serve.httpUrl}/${inPath}`, '--api-key', key, '--verbose'];
    const post = [...common, '--stream', 'macro-wire', 'x'];
    const runs = await Promise.all([
      runInProcess(['listen', ...common, '--timeout', '3000']),
      runInProcess(['post', ...post]),
      runInProcess(['post', '--via', 'rest', ...post]),
    ]);
    for (const run of runs) {
      expect(run.code).not.toBe(0);
      const output = run.stdout + run.stderr;
      // Each says where it went, with the marker where the key was.
      expect(output).toContain(`${serve.httpUrl.replace(/^http/, '')}/[redacted]`);
      for (const text of [output, decodedFully(output)]) expect(text).not.toContain(key);
      expect(output).not.toContain(inPath);
    }
  });
});
