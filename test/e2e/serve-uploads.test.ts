import { request } from 'node:http';
import { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { KEYS } from '../support/harness.js';
import { ensureBuilt } from '../support/cli.js';
import { PNG, put } from '../support/media.js';
import { until } from '../support/poll.js';
import { startLoggedServe, startServe, type Serve } from '../support/serve.js';

const MIB = 1024 * 1024;

/** A REST publish to macro-wire declaring one image; its upload address. */
async function uploadAddress(serve: Pick<Serve, 'httpUrl'>): Promise<string> {
  const response = await fetch(`${serve.httpUrl}/v1/streams/macro-wire/post`, {
    method: 'POST',
    headers: { 'x-api-key': KEYS.macroWire, 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'chart', contentType: 'rawtext', uploadMedia: [{ mimeType: 'image/png' }] }),
  });
  expect(response.status).toBe(201);
  const reply = (await response.json()) as { mediaUploadURLs: { url: string }[] };
  return reply.mediaUploadURLs[0]!.url;
}

/** A status, or what the client saw instead of one (EPIPE, "other side closed"). */
function statusOrFailure(url: string, body: Buffer, method = 'PUT'): Promise<number | string> {
  return fetch(url, { method, headers: { 'content-type': 'image/png' }, body }).then(
    async (response) => {
      await response.arrayBuffer();
      return response.status;
    },
    (error: Error) => `${error.message}: ${String((error.cause as Error | undefined)?.message)}`,
  );
}

describe('serve: upload addresses', () => {
  it('lets each of 40 PUTs at once to one address read its answer (one at a time: 409), never a broken pipe', async () => {
    ensureBuilt();
    const serve = await startServe();
    const url = await uploadAddress(serve);
    // Large enough that a refused client is still sending when its answer comes.
    const body = Buffer.alloc(4 * MIB, 1);
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => statusOrFailure(url, body)));
    for (const outcome of outcomes) expect([200, 409]).toContain(outcome);
    expect(outcomes).toContain(409);
    // Every other refusal reads the body too: an unknown address, a wrong type, a wrong method.
    const refused = await Promise.all([
      ...Array.from({ length: 10 }, () => statusOrFailure(`${serve.httpUrl}/v1/uploads/nothing-here`, body)),
      ...Array.from({ length: 10 }, () => statusOrFailure(url, body, 'POST')),
    ]);
    expect(refused).toEqual([...Array.from({ length: 10 }, () => 404), ...Array.from({ length: 10 }, () => 405)]);
    // The address still takes an upload.
    expect((await put(url, 'image/png', PNG)).status).toBe(200);
  });

  it('never logs an upload address: refused, unread and upgraded requests to one name the folder only', async () => {
    ensureBuilt();
    const serve = await startLoggedServe([], 0);
    const url = await uploadAddress(serve);
    const token = url.slice(url.lastIndexOf('/') + 1);
    const { pathname } = new URL(url);
    // Refused at the perimeter: a Host this serve does not answer for.
    const refused = await new Promise<number>((resolve, reject) => {
      request(`${serve.httpUrl}${pathname}`, {
        method: 'PUT',
        headers: { host: 'attacker.example' },
      })
        .on('response', (response) => {
          response.resume();
          resolve(response.statusCode!);
        })
        .on('error', reject)
        .end();
    });
    expect(refused).toBe(403);
    // A body over the limit: not read.
    expect(await statusOrFailure(url, Buffer.alloc(10 * MIB + 1))).toBe(413);
    // An upgrade to the upload address: no WebSocket lives there.
    const upgrade = await new Promise<string>((resolve) => {
      new WebSocket(url.replace(/^http/, 'ws')).on('error', (error) => resolve(error.message));
    });
    expect(upgrade).toContain('404');

    const wanted = ['request refused', 'request body not read', 'upgrade to unknown path'];
    await until(() => wanted.every((msg) => serve.logs().some((line) => line.msg === msg)), 'the three log lines');
    for (const msg of wanted) {
      const line = serve.logs().find((each) => each.msg === msg)!;
      expect(line['path'], msg).toBe('/v1/uploads/…');
    }
    expect(serve.cli.stdout + serve.cli.stderr).not.toContain(token);
  });
});
