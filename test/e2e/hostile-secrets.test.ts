import type { IncomingMessage, ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { client, ensureBuilt, finish } from '../support/cli.js';
import { scriptedService, type ScriptedService } from '../support/hostile.js';
import { UNSAFE_CHARACTERS } from '../support/unsafe-characters.js';

const KEY = 'sp_live_k3y_9f8e7d6c5b4a';
const ADMIN_TOKEN = 'adm_t0ken_1a2b3c4d5e6f';

/** The secret once for every character the sanitizer takes out, that character inside it. */
const splitCopies = (secret: string): string =>
  UNSAFE_CHARACTERS.map((char) => `${secret.slice(0, 6)}${char}${secret.slice(6)}`).join(' | ');

// Whatever the sanitizer did with a character (took it out, made it a space), the secret
// must not be there once every such character and all whitespace is gone.
const JOINER = new RegExp(
  `[\\s${UNSAFE_CHARACTERS.map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}]`,
  'g',
);

/** `text` with `%XX` escapes decoded byte by byte (the secrets here are ASCII). */
const percentDecoded = (text: string) =>
  text.replace(/%([0-9a-f]{2})/gi, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

function expectNoSecret(
  out: { stdout: string; stderr: string },
  secret: string,
  shownOn: 'stdout' | 'stderr' = 'stderr',
): void {
  for (const [name, text] of [
    ['stdout', out.stdout],
    ['stderr', out.stderr],
  ] as const) {
    expect(text.replace(JOINER, ''), name).not.toContain(secret);
    expect(percentDecoded(text).replace(JOINER, ''), name).not.toContain(secret);
  }
  // Each split copy was seen, and replaced (the trace also shows each frame or reply that held them).
  expect((out[shownOn].match(/\[redacted\]/g) ?? []).length).toBeGreaterThanOrEqual(UNSAFE_CHARACTERS.length);
}

/** An error body that names the secret in every split form. */
const refusal = (secret: string) => JSON.stringify({ error: { code: 'forbidden', message: splitCopies(secret) } });

/**
 * A service that echoes the key it was given: every WebSocket command and every REST request is
 * refused with a message holding the key, split once by each character the sanitizer takes out.
 */
function echoingService(): Promise<ScriptedService> {
  return scriptedService(
    (ws) => {
      ws.send(JSON.stringify({ event: 'connected', data: { message: 'connected', userId: 'u', streams: ['s'] } }));
      ws.on('message', (data) => {
        const command = JSON.parse(String(data)) as { event: string; requestId?: string };
        ws.send(
          JSON.stringify({
            event: 'error',
            requestId: command.requestId,
            data: { code: 'forbidden', message: splitCopies(KEY), command: command.event },
          }),
        );
      });
    },
    {
      onRequest: (request: IncomingMessage, response: ServerResponse) => {
        request.resume();
        const admin = (request.url ?? '').startsWith('/_admin');
        response.writeHead(403, { 'content-type': 'application/json' }).end(refusal(admin ? ADMIN_TOKEN : KEY));
      },
    },
  );
}

beforeAll(() => ensureBuilt());

describe('a service that echoes the key split by invisible and control characters never gets it printed', () => {
  const withKey = (service: ScriptedService, command: string[]) => [...command, '--url', service.url, '--api-key', KEY];

  it.each([
    ['listen', ['listen', '--no-reconnect']],
    ['post', ['post', '--stream', 's', 'hello']],
    ['post --via rest', ['post', '--via', 'rest', '--stream', 's', 'hello']],
    ['history', ['history', '--streams', 's']],
    ['streams', ['streams']],
    ['listen --trace', ['listen', '--no-reconnect', '--trace']],
    ['history --trace', ['history', '--streams', 's', '--trace']],
  ])('%s: the error line and the trace', async (_name, command) => {
    const service = await echoingService();
    const result = await finish(client(withKey(service, command)));
    expect(result.code, result.stderr).not.toBe(0);
    if (command.includes('--trace')) expect(result.stderr).toMatch(/^\+\d+\.\d{3}s < .*forbidden/m);
    expectNoSecret(result, KEY);
  });

  it.each([
    ['faults list', ['faults', 'list']],
    ['faults add --trace', ['faults', 'add', 'drop-acks', '--trace']],
  ])('%s: the admin token, in the error line and the trace', async (_name, command) => {
    const service = await echoingService();
    const admin = service.url.replace(/^ws:/, 'http:');
    const result = await finish(client([...command, '--admin-url', admin, '--admin-token', ADMIN_TOKEN]));
    expect(result.code, result.stderr).not.toBe(0);
    if (command.includes('--trace')) expect(result.stderr).toMatch(/^\+\d+\.\d{3}s < 403 .*forbidden/m);
    expectNoSecret(result, ADMIN_TOKEN);
  });
  it.each([
    ['faults list', []],
    ['faults list --json', ['--json']],
  ])('%s: the admin token in what the service lists', async (_name, flags) => {
    const fault = { id: 'f1', type: 'close', createdAt: '2026-01-01T00:00:00.000Z', reason: splitCopies(ADMIN_TOKEN) };
    const service = await scriptedService(() => {}, {
      onRequest: (request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ faults: [fault] }));
      },
    });
    const admin = service.url.replace(/^ws:/, 'http:');
    const result = await finish(
      client(['faults', 'list', ...flags, '--admin-url', admin, '--admin-token', ADMIN_TOKEN]),
    );
    expect(result.code, result.stderr).toBe(0);
    expectNoSecret(result, ADMIN_TOKEN, 'stdout');
  });
});
