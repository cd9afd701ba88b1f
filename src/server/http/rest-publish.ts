import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { parsePublishArgs } from '../../protocol/commands.js';
import { ProtocolError } from '../../protocol/errors.js';
import { isPlainObject } from '../../protocol/objects.js';
import { PUBLISH_COMMAND, type PublishArgs } from '../../protocol/types.js';
import { isMediaType, MAX_UPLOAD_ITEMS, type Reservation } from './media.js';

export const MAX_METADATA_BYTES = 16 * 1024;
/**
 * How deep `metadata` may nest. A Redis store decodes stored posts in Lua, whose JSON reader
 * refuses past 1000 levels: a post it could not read would stop every release after it.
 */
const MAX_METADATA_DEPTH = 32;

function invalid(message: string): ProtocolError {
  return new ProtocolError('invalid-argument', message, PUBLISH_COMMAND);
}

function depthOf(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  if (limit === 0) return 1;
  let deepest = 0;
  for (const child of Object.values(value)) deepest = Math.max(deepest, depthOf(child, limit - 1));
  return deepest + 1;
}

function parseMetadata(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw invalid('metadata must be a JSON object');
  if (Buffer.byteLength(JSON.stringify(value), 'utf8') > MAX_METADATA_BYTES) {
    throw invalid(`metadata must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
  }
  if (depthOf(value, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH) {
    throw invalid(`metadata must nest at most ${MAX_METADATA_DEPTH} levels deep`);
  }
  return value;
}

/**
 * The types of the declared items that get an upload address. An item of a type the service
 * does not take is left out, not refused: hosted publishers read a 201 without its address as
 * "unsupported type", and never expect a 400 for it.
 */
function parseUploadMedia(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid('uploadMedia must be an array of {"mimeType": "image/jpeg"} items');
  if (value.length > MAX_UPLOAD_ITEMS) throw invalid(`uploadMedia must list at most ${MAX_UPLOAD_ITEMS} items`);
  const types = value.map((item: unknown, i) => {
    const mimeType = isPlainObject(item) ? item['mimeType'] : undefined;
    if (typeof mimeType !== 'string') {
      throw invalid(`uploadMedia[${i}].mimeType must be a string, e.g. image/jpeg or video/mp4`);
    }
    return mimeType.toLowerCase();
  });
  return types.filter(isMediaType);
}

/**
 * The REST form of a publish: the command's arguments (the stream from the path) plus the
 * fuller list public publishers send. Fields neither knows (`id`, a numeric `createdAt`, …)
 * are ignored, as the hosted service ignores them.
 */
export function parseRestPublish(
  fields: Record<string, unknown>,
  streamId: string,
): { args: PublishArgs; metadata: Record<string, unknown> | undefined; uploadMedia: string[] | undefined } {
  const args = parsePublishArgs({ ...fields, streamId });
  const metadata = parseMetadata(fields['metadata']);
  const uploadMedia = parseUploadMedia(fields['uploadMedia']);
  if (uploadMedia !== undefined && metadata?.['media'] !== undefined && !Array.isArray(metadata['media'])) {
    throw invalid('metadata.media must be an array when uploadMedia is given: the uploads are added to it');
  }
  return { args, metadata, uploadMedia };
}

/** The metadata a post is stored with: the publisher's, its `media` listing where the uploads will be. */
export function withMedia(
  metadata: Record<string, unknown> | undefined,
  reservations: readonly Reservation[] | undefined,
): Record<string, unknown> | undefined {
  if (reservations === undefined || reservations.length === 0) return metadata;
  const given = (metadata?.['media'] as unknown[] | undefined) ?? [];
  return { ...metadata, media: [...given, ...reservations.map(({ type, url }) => ({ type, url }))] };
}

const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** `http(s)://host[:port]` as the client reached this server (its Host header), for addresses it can use. */
export function requestOrigin(req: IncomingMessage): string {
  const scheme = (req.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http';
  const host = req.headers.host;
  if (host !== undefined && HOST.test(host)) return `${scheme}://${host}`;
  const { localAddress = '127.0.0.1', localPort } = req.socket;
  return `${scheme}://${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${localPort}`;
}
