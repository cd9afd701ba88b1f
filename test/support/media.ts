import type { ServerAddress } from './harness.js';
import { http, KEYS } from './harness.js';

/** The first bytes of a PNG: what the tests upload as an image. */
export const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/** One `PUT` to an upload address, as a publisher sends its file. */
export async function put(url: string, type: string, body: Buffer): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'PUT', headers: { 'content-type': type }, body });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** One `GET` of a media address, with a key in `x-api-key` when given. */
export async function getMedia(
  url: string,
  key?: string,
): Promise<{ status: number; type: string | null; bytes: Buffer; headers: Headers }> {
  const response = await fetch(url, { headers: key === undefined ? {} : { 'x-api-key': key } });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    bytes: Buffer.from(await response.arrayBuffer()),
    headers: response.headers,
  };
}

/** A REST publish to macro-wire with its stream key, declaring `uploadMedia`. */
export function publishWithMedia(
  server: ServerAddress,
  uploadMedia: unknown,
  extra: Record<string, unknown> = {},
  stream: { id: string; key: string } = { id: 'macro-wire', key: KEYS.macroWire },
) {
  return http(server, 'POST', `/v1/streams/${stream.id}/post`, {
    key: stream.key,
    body: { content: 'chart attached', contentType: 'rawtext', uploadMedia, ...extra },
  });
}
