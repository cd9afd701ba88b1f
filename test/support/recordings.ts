import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type Json,
  type RecordedConnection,
  type RecordedEvent,
  type RecordedExchange,
  type Recording,
} from '../../src/protocol/recording.js';
import WebSocket from 'ws';
import { afterTest, type ServerAddress } from './harness.js';
import { dropAfterTest, WireClient } from './wire.js';

/** When the recordings below were made: every date-time in them counts from it. */
export const RECORDED_AT = '2026-01-05T10:00:00.000Z';

/** A date-time `ms` after RECORDED_AT, as a recording holds it. */
export const recordedTime = (ms: number): string => new Date(Date.parse(RECORDED_AT) + ms).toISOString();

/** A recording as `serve --record` writes one, of these connections and requests. */
export function recording(parts: { connections?: RecordedConnection[]; requests?: RecordedExchange[] }): Recording {
  return {
    meta: {
      format: RECORDING_FORMAT,
      version: RECORDING_VERSION,
      recordedAt: RECORDED_AT,
      upstream: 'wss://upstream.example',
      tool: { name: 'stream-posts', version: '0.0.0' },
      dialect: 'hosted',
      redactions: [{ kind: 'api-key', placeholder: '<key-1>', count: 1 }],
      truncated: false,
    },
    connections: parts.connections ?? [],
    requests: parts.requests ?? [],
  };
}

/** A client's JSON frame at `t`. */
export const fromClient = (t: number, json: Json): RecordedEvent => ({ t, from: 'client', op: 'text', json });
/** A server's JSON frame at `t`. */
export const fromServer = (t: number, json: Json): RecordedEvent => ({ t, from: 'server', op: 'text', json });

/** A `/v1/ws` connection whose key was `<key-1>` in the query. */
export function wsConnection(
  id: number,
  events: RecordedEvent[],
  request: Partial<RecordedConnection['request']> = {},
): RecordedConnection {
  return {
    id,
    at: id * 10,
    transport: 'ws',
    request: { path: '/v1/ws', query: [['apiKey', '<key-1>']], headers: {}, ...request },
    events,
  };
}

/** A REST exchange: `method path?query` answered `status` with a JSON body. */
export function exchange(
  id: number,
  method: string,
  path: string,
  query: [string, string][],
  response: { status: number; json: Json; t?: number },
  body?: Json,
): RecordedExchange {
  return {
    id,
    at: id * 10,
    method,
    request: { path, query, headers: {}, ...(body === undefined ? {} : { body: { json: body } }) },
    response: {
      t: response.t ?? 5,
      status: response.status,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: { json: response.json },
    },
  };
}

/** Writes a recording (or any text) to a file of a folder removed after the test; resolves to its path. */
export async function recordingFile(content: Recording | string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'stream-posts-replay-'));
  afterTest(() => rm(folder, { recursive: true, force: true }));
  const file = join(folder, 'session.json');
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

/** A WebSocket to `server` at `path` (query included), recording what it is sent; resolves once open. */
export async function openReplayed(
  server: Pick<ServerAddress, 'url'>,
  path: string,
  options: WebSocket.ClientOptions & { protocols?: string[] } = {},
): Promise<WireClient> {
  const { protocols, ...wsOptions } = options;
  const ws = new WebSocket(`${server.url}${path}`, protocols, wsOptions);
  const client = new WireClient(ws);
  dropAfterTest(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return client;
}
