import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProtocolError } from '../../protocol/errors.js';
import type { Clock } from '../service/clock.js';
import { readBody, sendError, sendJson } from './http-util.js';

/** Where a publisher `PUT`s the bytes of one declared item (the address is the capability). */
export const UPLOAD_PATH = '/v1/uploads/';
/** Where an uploaded item is served, as the post's `metadata.media` lists it. */
export const MEDIA_PATH = '/v1/media/';

export const MAX_UPLOAD_ITEMS = 4;
export const MAX_MEDIA_BYTES = 10 * 1024 * 1024;
export const UPLOAD_WINDOW_MS = 10 * 60_000;
/** All media this process keeps, together: past it an upload is refused and nothing stored. */
export const MAX_TOTAL_MEDIA_BYTES = 256 * 1024 * 1024;
/** Upload addresses handed out and not yet used or lapsed, for the whole process. */
export const MAX_PENDING_UPLOADS = 1_000;
/** How long a lapsed address still answers 410 (not 404), so a late uploader learns why. */
const LAPSED_KEPT_MS = 60 * 60_000;

/** `image/…` or `video/…`, the subtype as RFC 6838 spells names. */
const MEDIA_TYPE = /^(image|video)\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

export function isMediaType(text: string): boolean {
  return MEDIA_TYPE.test(text.toLowerCase());
}

/** A Content-Type header without its parameters, lower case (types are case-insensitive). */
function essence(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

interface Slot {
  readonly type: string;
  readonly mediaId: string;
  readonly expiresAt: number;
  state: 'pending' | 'uploading' | 'done';
}

/** One declared item, as the 201 of a publish gives it and its post lists it. */
export interface Reservation {
  type: string;
  uploadUrl: string;
  url: string;
}

const token = (bytes: number) => randomBytes(bytes).toString('base64url');

/**
 * Media a REST publisher declared (`uploadMedia`) and then uploads, kept in this process's
 * memory: single-use upload addresses, each open for a window of the service clock, and the
 * items they received, served by GET. On a shared store each instance keeps its own.
 */
export class MediaStore {
  readonly #clock: Clock;
  // Insertion order is expiry order (one window, a clock that only moves forward).
  readonly #slots = new Map<string, Slot>();
  readonly #items = new Map<string, { type: string; bytes: Buffer }>();
  #pending = 0;
  #storedBytes = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Upload addresses for `types` under `origin` (`http://host:port`); refused past the pending cap. */
  reserve(types: readonly string[], origin: string): Reservation[] {
    const now = this.#clock.now();
    this.#sweep(now);
    if (this.#pending + types.length > MAX_PENDING_UPLOADS) {
      throw new ProtocolError(
        'limit-exceeded',
        `the server already waits for ${this.#pending} uploads, at most ${MAX_PENDING_UPLOADS}; retry later`,
      );
    }
    return types.map((type) => {
      const uploadToken = token(24);
      const slot: Slot = { type, mediaId: token(16), expiresAt: now + UPLOAD_WINDOW_MS, state: 'pending' };
      this.#slots.set(uploadToken, slot);
      this.#pending += 1;
      return { type, uploadUrl: `${origin}${UPLOAD_PATH}${uploadToken}`, url: `${origin}${MEDIA_PATH}${slot.mediaId}` };
    });
  }

  /** Withdraws addresses that were never given out (the publish they were for failed or was a repeat). */
  cancel(reservations: readonly Reservation[]): void {
    for (const { uploadUrl } of reservations) {
      const uploadToken = uploadUrl.slice(uploadUrl.lastIndexOf('/') + 1);
      if (this.#slots.get(uploadToken)?.state === 'pending') this.#pending -= 1;
      this.#slots.delete(uploadToken);
    }
  }

  #sweep(now: number): void {
    for (const [uploadToken, slot] of this.#slots) {
      if (slot.expiresAt > now) break;
      if (slot.state === 'pending') {
        this.#pending -= 1;
        // Kept as lapsed a while (answering 410), then forgotten.
        slot.state = 'done';
      }
      if (slot.expiresAt + LAPSED_KEPT_MS <= now && !this.#items.has(slot.mediaId)) this.#slots.delete(uploadToken);
    }
  }

  /** Answers `PUT /v1/uploads/{token}` and `GET /v1/media/{id}`; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, bodyTimeoutMs: number): Promise<boolean> {
    if (url.pathname.startsWith(UPLOAD_PATH)) {
      if (req.method !== 'PUT')
        sendError(res, 'bad-request', 'an upload address accepts PUT only', 405, { allow: 'PUT' });
      else await this.#upload(req, res, url.pathname.slice(UPLOAD_PATH.length), bodyTimeoutMs);
      return true;
    }
    if (url.pathname.startsWith(MEDIA_PATH)) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, 'bad-request', 'a media address accepts GET only', 405, { allow: 'GET, HEAD' });
      } else this.#serve(req, res, url.pathname.slice(MEDIA_PATH.length));
      return true;
    }
    return false;
  }

  async #upload(req: IncomingMessage, res: ServerResponse, uploadToken: string, bodyTimeoutMs: number): Promise<void> {
    const now = this.#clock.now();
    this.#sweep(now);
    const slot = this.#slots.get(uploadToken);
    // The body is not read in any of these cases: the connection closes after the answer.
    const refuse = (status: number, code: 'not-found' | 'invalid-argument' | 'forbidden', message: string) =>
      sendError(res, code, message, status, { connection: 'close' });
    if (!slot) return refuse(404, 'not-found', 'no upload at this address');
    if (slot.state === 'done' && this.#items.has(slot.mediaId)) {
      return refuse(409, 'forbidden', 'this upload address was already used; each takes one upload');
    }
    if (slot.state === 'done' || slot.expiresAt <= now) {
      return refuse(
        410,
        'forbidden',
        `this upload address lapsed: uploads are taken within ${UPLOAD_WINDOW_MS / 60_000} minutes of the publish`,
      );
    }
    if (slot.state === 'uploading') return refuse(409, 'forbidden', 'an upload to this address is already under way');
    if (essence(req.headers['content-type']) !== slot.type) {
      return refuse(415, 'invalid-argument', `the Content-Type must be ${slot.type}, the type declared in uploadMedia`);
    }
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && this.#storedBytes + declared > MAX_TOTAL_MEDIA_BYTES) return this.#full(res);
    slot.state = 'uploading';
    let bytes: Buffer;
    try {
      bytes = await readBody(req, MAX_MEDIA_BYTES, bodyTimeoutMs);
    } finally {
      // A failed upload (too large, too slow, cut off) leaves the address open for another try.
      slot.state = 'pending';
    }
    if (this.#storedBytes + bytes.length > MAX_TOTAL_MEDIA_BYTES) return this.#full(res);
    slot.state = 'done';
    this.#pending -= 1;
    this.#storedBytes += bytes.length;
    this.#items.set(slot.mediaId, { type: slot.type, bytes });
    sendJson(res, 200, { type: slot.type, size: bytes.length, url: `${MEDIA_PATH}${slot.mediaId}` });
  }

  #full(res: ServerResponse): void {
    sendError(
      res,
      'limit-exceeded',
      `the server keeps at most ${MAX_TOTAL_MEDIA_BYTES} bytes of media and has no room for this upload`,
      507,
      { connection: 'close' },
    );
  }

  #serve(req: IncomingMessage, res: ServerResponse, mediaId: string): void {
    const item = this.#items.get(mediaId);
    if (!item) {
      sendError(res, 'not-found', 'no media at this address (not uploaded yet, or never declared)');
      return;
    }
    res.writeHead(200, {
      'content-type': item.type,
      'content-length': item.bytes.length,
      'cache-control': 'private, max-age=3600',
      // Uploaded by anyone with a stream key and served from the service's own origin: never run as a page.
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    });
    res.end(req.method === 'HEAD' ? undefined : item.bytes);
  }
}
