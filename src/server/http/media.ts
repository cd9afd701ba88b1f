import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { redactUrl } from '../../protocol/redact.js';
import type { Clock } from '../clock.js';
import type { StreamPostsService } from '../service/service.js';
import { readerOf, withheld } from '../service/visibility.js';
import { readBody, refuseUnread, sendError, sendJson } from '../http-util.js';
import {
  MAX_STREAM_MEDIA_BYTES,
  MAX_TOTAL_MEDIA_BYTES,
  type MediaKeeper,
  type MediaOwner,
  type Stored,
} from '../stores/media-keeper.js';

/** Where a publisher `PUT`s the bytes of one declared item (the address is the capability). */
export const UPLOAD_PATH = '/v1/uploads/';
/** Where an uploaded item is served, as the post's `metadata.media` lists it. */
export const MEDIA_PATH = '/v1/media/';

/** Where an upload address's token starts, however a request spells the folder before it. */
const UPLOAD_FOLDER = /\/uploads(?:\/|%2f)/i;

/**
 * A request target as the log may hold it: an upload address is a capability, so its token
 * is cut (whatever else follows it), and a key in the query is redacted.
 */
export function loggedPath(target: string): string {
  const folder = UPLOAD_FOLDER.exec(target);
  return folder ? `${target.slice(0, folder.index + folder[0].length)}…` : redactUrl(target);
}

export const MAX_UPLOAD_ITEMS = 4;
export const MAX_MEDIA_BYTES = 10 * 1024 * 1024;

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
 * Media a REST publisher declared (`uploadMedia`) and then uploads: upload addresses, each
 * taking any number of uploads (the last one kept) for a window of the service clock, as
 * presigned storage URLs do, and the items they received, served by GET (held back with a
 * hidden post). Kept by a MediaKeeper: this process's memory, or Redis, which every instance
 * on it shares.
 */
export class MediaStore {
  readonly #clock: Clock;
  readonly #keeper: MediaKeeper;
  readonly #service: StreamPostsService;
  readonly #windowMs: number;

  constructor(clock: Clock, keeper: MediaKeeper, service: StreamPostsService, windowMs: number) {
    this.#clock = clock;
    this.#keeper = keeper;
    this.#service = service;
    this.#windowMs = windowMs;
  }

  /** Upload addresses for `types` under `origin` (`http://host:port`); refused past the open-address caps. */
  async reserve(types: readonly string[], owner: MediaOwner, origin: string): Promise<Reservation[]> {
    const now = this.#clock.now();
    const slots = types.map((type) => ({
      token: token(24),
      type,
      mediaId: token(16),
      expiresAt: now + this.#windowMs,
    }));
    await this.#keeper.reserve(slots, owner, now);
    return slots.map(({ token: uploadToken, type, mediaId }) => ({
      type,
      uploadUrl: `${origin}${UPLOAD_PATH}${uploadToken}`,
      url: `${origin}${MEDIA_PATH}${mediaId}`,
    }));
  }

  /** Withdraws addresses that were never given out (the publish they were for failed or was a repeat). */
  async cancel(reservations: readonly Reservation[]): Promise<void> {
    await this.#keeper.cancel(tokensOf(reservations));
  }

  /** The addresses were given out for this stored post, so its media leave with it. */
  async attach(reservations: readonly Reservation[], postId: string): Promise<void> {
    await this.#keeper.attach(tokensOf(reservations), postId);
  }

  /** Answers `PUT /v1/uploads/{token}` and `GET /v1/media/{id}`; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, bodyTimeoutMs: number): Promise<boolean> {
    if (url.pathname.startsWith(UPLOAD_PATH)) {
      if (req.method !== 'PUT') {
        res.setHeader('allow', 'PUT');
        refuseUnread(res, MAX_MEDIA_BYTES, 'bad-request', 'an upload address accepts PUT only', 405);
      } else await this.#upload(req, res, url.pathname.slice(UPLOAD_PATH.length), bodyTimeoutMs);
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
    // Many clients may put to one address at once: each refused one reads its answer.
    const refuse = (status: number, code: 'not-found' | 'invalid-argument' | 'forbidden', message: string) =>
      refuseUnread(res, MAX_MEDIA_BYTES, code, message, status);
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
        case 'lapsed':
          return refuse(
            410,
            'forbidden',
            `this upload address lapsed: uploads are taken within ${durationText(this.#windowMs)} of the publish`,
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
          return this.#full(res, claim.cap);
      }
    }
    let bytes: Buffer;
    let stored: Stored;
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
    if (!stored.ok) {
      if (stored.why === 'full') return this.#full(res, stored.cap);
      return sendError(res, 'not-found', 'no upload at this address any more: its post is gone', 404);
    }
    sendJson(res, 200, { type: claim.type, size: bytes.length, url: `${MEDIA_PATH}${claim.mediaId}` });
  }

  #full(res: ServerResponse, cap: 'service' | 'stream'): void {
    const room =
      cap === 'stream'
        ? `a stream keeps at most ${MAX_STREAM_MEDIA_BYTES} bytes of media and this one`
        : `the server keeps at most ${MAX_TOTAL_MEDIA_BYTES} bytes of media and`;
    refuseUnread(res, MAX_MEDIA_BYTES, 'limit-exceeded', `${room} has no room for this upload`, 507);
  }

  async #serve(req: IncomingMessage, res: ServerResponse, mediaId: string): Promise<void> {
    const item = await this.#keeper.item(mediaId);
    // Media of a hidden post do not exist for anyone but its owner until the release.
    if (!item || (await this.#withheld(req, item))) {
      sendError(res, 'not-found', 'no media at this address (not uploaded yet, or never declared)');
      return;
    }
    res.writeHead(200, {
      'content-type': item.type,
      'content-length': item.bytes.length,
      'cache-control': 'private, max-age=3600',
      // Before its post's release the answer depends on the key asking.
      vary: 'x-api-key',
      // Uploaded by anyone with a stream key and served from the service's own origin: never run as a page.
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    });
    res.end(req.method === 'HEAD' ? undefined : item.bytes);
  }

  /** Only an item still under embargo needs to know who asks: the owner's key, in `x-api-key`. */
  async #withheld(req: IncomingMessage, item: MediaOwner): Promise<boolean> {
    const now = this.#clock.now();
    if (!withheld(item.releaseAt, now, 'anyone')) return false;
    const key = req.headers['x-api-key'];
    const identity = typeof key === 'string' ? await this.#service.authenticate(key) : undefined;
    const stream = this.#service.stream(item.streamId);
    return stream === undefined || withheld(item.releaseAt, now, readerOf(identity, stream));
  }
}

function tokensOf(reservations: readonly Reservation[]): string[] {
  return reservations.map(({ uploadUrl }) => uploadUrl.slice(uploadUrl.lastIndexOf('/') + 1));
}

/** `1 hour`, `10 minutes`, `90 seconds`: the upload window as a person reads it. */
function durationText(ms: number): string {
  for (const [unit, size] of [
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}
