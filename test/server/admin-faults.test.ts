import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { adminState, connectAs, http, KEYS, startTestServer } from '../support/harness.js';
import { RecordingLogger } from '../support/logger.js';

function addFault(server: StreamPostsServer, fault: unknown, headers: Record<string, string> = {}) {
  return http(server, 'POST', '/_admin/faults', { body: fault, headers });
}

describe('POST /_admin/faults', () => {
  it.each([
    [{}, 'type must be one of close, refuse-connections'],
    [{ type: 'explode' }, 'type must be one of'],
    [{ type: 'close', code: 1006 }, 'code must be a close code that can be sent'],
    [{ type: 'close', code: 'x' }, 'code must be an integer from 1000 to 4999'],
    [{ type: 'close', reason: 'r'.repeat(124) }, 'reason must be a string of at most 123 bytes'],
    [{ type: 'refuse-connections', status: 200 }, 'status must be an integer from 400 to 599'],
    [{ type: 'refuse-connections', scope: { connection: 'c1' } }, 'scope.connection cannot match'],
    [{ type: 'delay-deliveries' }, 'delayMs is required'],
    [{ type: 'delay-deliveries', delayMs: -1 }, 'delayMs must be an integer from 0 to 600000'],
    [{ type: 'fail-publishes', code: 'nope' }, 'code must be an error code'],
    [{ type: 'fail-publishes', count: 0 }, 'count must be an integer from 1'],
    [{ type: 'drop-acks', count: 1.5 }, 'count must be an integer from 1'],
    [{ type: 'send-frame' }, 'frame is required'],
    [{ type: 'send-frame', frame: 'x', durationMs: 10 }, 'durationMs does not apply to a send-frame fault'],
    [{ type: 'go-silent', delayMs: 5 }, 'delayMs is not a field of a go-silent fault'],
    [{ type: 'go-silent', scope: 'alice' }, 'scope must be an object'],
    [{ type: 'go-silent', scope: { owner: 'alice' } }, 'scope.owner is not a scope field'],
    [{ type: 'go-silent', scope: { user: 7 } }, 'scope.user must be a non-empty string'],
    [{ type: 'go-silent', scope: { key: 'not-a-key' } }, 'scope.key is not a key of this service'],
  ])('refuses %j with 400 invalid-argument naming the field, and injects nothing', async (fault, words) => {
    const server = await startTestServer();
    const reply = await addFault(server, fault);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid-argument');
    expect(reply.body.error.message).toContain(words);
    expect((await http(server, 'GET', '/_admin/faults')).body).toEqual({ faults: [] });
  });

  it('refuses a body that is not JSON (400 bad-json) or not an object, and a non-JSON content type (415)', async () => {
    const server = await startTestServer();
    const notJson = await http(server, 'POST', '/_admin/faults', {
      rawBody: '{"type":',
      headers: { 'content-type': 'application/json' },
    });
    expect([notJson.status, notJson.body.error.code]).toEqual([400, 'bad-json']);
    const array = await addFault(server, [{ type: 'go-silent' }]);
    expect([array.status, array.body.error.code]).toEqual([400, 'bad-request']);
    const text = await http(server, 'POST', '/_admin/faults', {
      rawBody: '{"type":"go-silent"}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect((await http(server, 'GET', '/_admin/faults')).body).toEqual({ faults: [] });
  });

  it('answers the fault as normalized with an id; lists it, in /_admin/state too; clears one (404 when unknown) and all', async () => {
    const server = await startTestServer();
    // A refused fault takes no id.
    expect((await addFault(server, { type: 'go-silent', scope: { key: 'sp_unknown_key' } })).status).toBe(400);
    const silent = await addFault(server, { type: 'go-silent', scope: { user: 'alice' } });
    expect(silent.status).toBe(200);
    expect(silent.body.fault).toEqual({
      type: 'go-silent',
      scope: { user: 'alice' },
      id: 'f1',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const failing = (await addFault(server, { type: 'fail-publishes', count: 2 })).body.fault;
    expect(failing).toMatchObject({ id: 'f2', type: 'fail-publishes', count: 2, code: 'unavailable' });
    expect((await http(server, 'GET', '/_admin/faults')).body.faults.map((fault: any) => fault.id)).toEqual([
      'f1',
      'f2',
    ]);
    expect((await adminState(server)).faults).toHaveLength(2);

    const unknown = await http(server, 'DELETE', '/_admin/faults/f9');
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not-found']);
    expect((await http(server, 'DELETE', '/_admin/faults/f1')).body).toEqual({ cleared: 1 });
    expect((await http(server, 'GET', '/_admin/faults')).body.faults.map((fault: any) => fault.id)).toEqual(['f2']);
    expect((await http(server, 'DELETE', '/_admin/faults')).body).toEqual({ cleared: 1 });
    expect((await adminState(server)).faults).toEqual([]);
  });

  it('says which methods a fault path takes (405 with Allow)', async () => {
    const server = await startTestServer();
    const put = await http(server, 'PUT', '/_admin/faults');
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
    expect((await http(server, 'GET', '/_admin/faults/f1')).headers.get('allow')).toBe('DELETE');
  });

  it('is cleared by /_admin/reset', async () => {
    const server = await startTestServer();
    await addFault(server, { type: 'pause-deliveries' });
    await addFault(server, { type: 'refuse-connections', durationMs: 60_000 });
    expect((await http(server, 'POST', '/_admin/reset', { body: {} })).status).toBe(200);
    expect((await http(server, 'GET', '/_admin/faults')).body).toEqual({ faults: [] });
    await connectAs(server, KEYS.alice);
  });

  it('never lists or logs a key given as a scope: it shows whose key it is', async () => {
    const logger = new RecordingLogger();
    const server = await startTestServer({ logger });
    const reply = await addFault(server, { type: 'stop-pongs', scope: { key: KEYS.macroWire } });
    expect(reply.body.fault.scope).toEqual({ keyOwner: 'macro-wire' });
    const reader = await addFault(server, { type: 'drop-acks', scope: { key: KEYS.alice } });
    expect(reader.body.fault.scope).toEqual({ keyOwner: 'alice' });
    await http(server, 'DELETE', '/_admin/faults');
    const everything = JSON.stringify([
      (await http(server, 'GET', '/_admin/state')).body,
      reply.body,
      reader.body,
      logger.lines,
    ]);
    expect(everything).not.toContain(KEYS.macroWire);
    expect(everything).not.toContain(KEYS.alice);
    const logged = logger.lines.filter((line) => line.message.startsWith('fault'));
    expect(logged.map((line) => [line.message, line.fields['fault'], line.fields['keyOwner']])).toEqual([
      ['fault set', 'f1', 'macro-wire'],
      ['fault set', 'f2', 'alice'],
      ['fault cleared', 'f1', undefined],
      ['fault cleared', 'f2', undefined],
    ]);
  });

  it('needs the admin token when one is set', async () => {
    const server = await startTestServer({ adminToken: 'fault-admin-token' });
    const without = await addFault(server, { type: 'go-silent' });
    expect([without.status, without.body.error.code]).toEqual([401, 'unauthorized']);
    expect((await http(server, 'GET', '/_admin/connections')).status).toBe(401);
    expect((await http(server, 'DELETE', '/_admin/faults')).status).toBe(401);
    const auth = { authorization: 'Bearer fault-admin-token' };
    expect((await http(server, 'GET', '/_admin/faults', { headers: auth })).body).toEqual({ faults: [] });
    expect((await addFault(server, { type: 'go-silent' }, auth)).status).toBe(200);
  });
});

describe('GET /_admin/connections', () => {
  it('lists each connection: id, user, stream, kind, subscriptions; never a key', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    expect((await alice.request('on-stream-post', { streamIds: ['macro-wire', 'whale-alerts'] })).event).toBe(
      'sub_ack',
    );
    expect((await alice.request('on-stream-post-tree', { streamIds: ['macro-wire'] })).event).toBe('sub_ack');
    await connectAs(server, KEYS.macroWire);
    const reply = await http(server, 'GET', '/_admin/connections');
    expect(reply.status).toBe(200);
    const [first, second] = reply.body.connections;
    expect(first).toEqual({
      id: 'c1',
      user: 'alice',
      stream: null,
      kind: 'user',
      subscriptions: [
        { streamIds: ['macro-wire', 'whale-alerts'], format: 'post' },
        { streamIds: ['macro-wire'], format: 'tree' },
      ],
      bufferedBytes: 0,
      connectedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      remoteAddress: expect.stringMatching(/127\.0\.0\.1/),
    });
    expect(second).toMatchObject({ id: 'c2', user: 'newsdesk', stream: 'macro-wire', kind: 'stream' });
    expect(JSON.stringify(reply.body)).not.toContain('sp_demo');
  });
});
