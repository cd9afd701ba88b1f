import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../service/clock.js';
import { readBody, sendError, sendJson } from './http-util.js';
import { MAX_TOTAL_MEDIA_BYTES, type MediaKeeper } from '../stores/media-keeper.js';

/** Where a publisher `PUT`s the bytes of one declared item (the address is the capability). */
export const UPLOAD_PATH = '/v1/uploads/';
/** Where an uploaded item is served, as the post's `metadata.media` lists it. */
export const MEDIA_PATH = '/v1/media/';

export const MAX_UPLOAD_ITEMS = 4;
export const MAX_MEDIA_BYTES = 10 * 1024 * 1024;
export const UPLOAD_WINDOW_MS = 10 * 60_000;

/** `image/…` or `video/…`, the subtype as RFC 6838 spells names. */
const MEDIA_TYPE = /^(image|video)\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

export function isMediaType(text: string): boolean {
  return MEDIA_TYPE.test(text.toLowerCase());
}

/** A Content-Type header without its parameters, lower case (types are case-insensitive). */
function essence(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** One declared item, as the 201 of a publish gives it and its post lists it. */
export interface Reservation {
  type: string;
  uploadUrl: string;
  url: string;
}

const token = (bytes: number) => randomBytes(bytes).toString('base64url');

/**
 * Media a REST publisher declared (`uploadMedia`) and then uploads: single-use upload
 * addresses, each open for a window of the service clock, and the items they received,
 * served by GET. Kept by a MediaKeeper: this process's memory, or Redis, which every
 * instance on it shares.
 */
export class MediaStore {
  readonly #clock: Clock;
  readonly #keeper: MediaKeeper;

  constructor(clock: Clock, keeper: MediaKeeper) {
    this.#clock = clock;
    this.#keeper = keeper;
  }

  /** Upload addresses for `types` under `origin` (`http://host:port`); refused past the pending cap. */
  async reserve(types: readonly string[], origin: string): Promise<Reservation[]> {
    const now = this.#clock.now();
    const slots = types.map((type) => ({
      token: token(24),
      type,
      mediaId: token(16),
      expiresAt: now + UPLOAD_WINDOW_MS,
    }));
    await this.#keeper.reserve(slots, now);
    return slots.map(({ token: uploadToken, type, mediaId }) => ({
      type,
      uploadUrl: `${origin}${UPLOAD_PATH}${uploadToken}`,
      url: `${origin}${MEDIA_PATH}${mediaId}`,
    }));
  }

  /** Withdraws addresses that were never given out (the publish they were for failed or was a repeat). */
  async cancel(reservations: readonly Reservation[]): Promise<void> {
    await this.#keeper.cancel(reservations.map(({ uploadUrl }) => uploadUrl.slice(uploadUrl.lastIndexOf('/') + 1)));
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
      } else await this.#serve(req, res, url.pathname.slice(MEDIA_PATH.length));
      return true;
    }
    return false;
  }

  async #upload(req: IncomingMessage, res: ServerResponse, uploadToken: string, bodyTimeoutMs: number): Promise<void> {
    // The body is not read in any of these cases: the connection closes after the answer.
    const refuse = (status: number, code: 'not-found' | 'invalid-argument' | 'forbidden', message: string) =>
      sendError(res, code, message, status, { connection: 'close' });
    const declared = Number(req.headers['content-length'] ?? -1);
    const claim = await this.#keeper.claim(
      uploadToken,
      this.#clock.now(),
      essence(req.headers['content-type']),
      Number.isFinite(declared) ? declared : -1,
    );
    if (!claim.ok) {
      switch (claim.why) {
        case 'not-found':
          return refuse(404, 'not-found', 'no upload at this address');
        case 'used':
          return refuse(409, 'forbidden', 'this upload address was already used; each takes one upload');
        case 'lapsed':
          return refuse(
            410,
            'forbidden',
            `this upload address lapsed: uploads are taken within ${UPLOAD_WINDOW_MS / 60_000} minutes of the publish`,
          );
        case 'busy':
          return refuse(409, 'forbidden', 'an upload to this address is already under way');
        case 'type':
          return refuse(
            415,
            'invalid-argument',
            `the Content-Type must be ${claim.type}, the type declared in uploadMedia`,
          );
        case 'full':
          return this.#full(res);
      }
    }
    let bytes: Buffer;
    let stored: boolean;
    try {
      bytes = await readBody(req, MAX_MEDIA_BYTES, bodyTimeoutMs);
      stored = await this.#keeper.store(uploadToken, claim.mediaId, bytes);
    } catch (error) {
      // A failed upload (too large, too slow, cut off, the store away) leaves the address open for another try.
      await Promise.resolve()
        .then(() => this.#keeper.unclaim(uploadToken))
        .catch(() => {});
      throw error;
    }
    if (!stored) return this.#full(res);
    sendJson(res, 200, { type: claim.type, size: bytes.length, url: `${MEDIA_PATH}${claim.mediaId}` });
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

  async #serve(req: IncomingMessage, res: ServerResponse, mediaId: string): Promise<void> {
    const item = await this.#keeper.item(mediaId);
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
