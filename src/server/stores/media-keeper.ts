import { ProtocolError } from '../../protocol/errors.js';
import type { Awaitable } from './awaitable.js';

/** All media one service keeps, together: past it an upload is refused and nothing stored. */
export const MAX_TOTAL_MEDIA_BYTES = 256 * 1024 * 1024;
/** Upload addresses open (handed out and not yet lapsed), for the whole service. */
export const MAX_PENDING_UPLOADS = 1_000;
/**
 * One stream's share of each: a quarter of the bytes, a tenth of the addresses, so one
 * stream's key cannot take the room every other stream uploads into.
 */
export const MAX_STREAM_MEDIA_BYTES = MAX_TOTAL_MEDIA_BYTES / 4;
export const MAX_STREAM_PENDING_UPLOADS = MAX_PENDING_UPLOADS / 10;
/** How long a lapsed address still answers 410 (not 404), so a late uploader learns why. */
export const LAPSED_KEPT_MS = 60 * 60_000;

/** What an upload address is for: its stream, and when its post is released (null: not hidden). */
export interface MediaOwner {
  readonly streamId: string;
  readonly releaseAt: number | null;
}

/** One upload address being opened: its secret token, the declared type, where it will be served, until when. */
export interface NewSlot {
  readonly token: string;
  readonly type: string;
  readonly mediaId: string;
  readonly expiresAt: number;
}

/** Why an upload cannot start, or the slot it took. */
export type Claim =
  | { readonly ok: true; readonly type: string; readonly mediaId: string }
  | { readonly ok: false; readonly why: 'not-found' | 'lapsed' | 'busy' }
  | { readonly ok: false; readonly why: 'full'; readonly cap: 'service' | 'stream' }
  | { readonly ok: false; readonly why: 'type'; readonly type: string };

/** What `store` did: kept the bytes, found no room (the address stays open), or found the address gone with its post. */
export type Stored =
  | { readonly ok: true }
  | { readonly ok: false; readonly why: 'full'; readonly cap: 'service' | 'stream' }
  | { readonly ok: false; readonly why: 'gone' };

/** One uploaded item of a snapshot's posts. */
export interface MediaSnapshot {
  mediaId: string;
  postId: string;
  type: string;
  bytes: Buffer;
}

export interface MediaItem extends MediaOwner {
  readonly type: string;
  readonly bytes: Buffer;
}

/**
 * Where upload addresses and uploaded media are kept: in this process (the memory store), or
 * in Redis, so that with several instances an upload and a `GET` may reach any of them. Each
 * rule (an address takes uploads within its window, under the caps) holds for the whole service.
 */
export interface MediaKeeper {
  /** Opens these addresses for one post; `limit-exceeded` past the service's or the stream's cap, and nothing opened. */
  reserve(slots: readonly NewSlot[], owner: MediaOwner, now: number): Awaitable<void>;
  /** Withdraws addresses never given out (the publish they were for failed or was a repeat). */
  cancel(tokens: readonly string[]): Awaitable<void>;
  /**
   * The post the addresses were opened for was stored as `postId`: its media leave with it
   * when it leaves its stream's history.
   */
  attach(tokens: readonly string[], postId: string): Awaitable<void>;
  /**
   * Takes an address for one upload of `type` (what the request says it sends), or says why
   * not; `declaredBytes` (the request's Content-Length, -1 when absent) is checked against
   * the room left, counting the bytes it replaces, before any byte is read.
   */
  claim(token: string, now: number, type: string, declaredBytes: number): Awaitable<Claim>;
  /** An upload that failed (too large, too slow, cut off): the address takes another try. */
  unclaim(token: string): Awaitable<void>;
  /** Keeps the bytes of a claimed address in place of what it held; the address stays open for more. */
  store(token: string, mediaId: string, bytes: Buffer): Awaitable<Stored>;
  item(mediaId: string): Awaitable<MediaItem | undefined>;
}

export function tooManyUploads(cap: 'service' | 'stream', pending: number, streamId: string): ProtocolError {
  const where =
    cap === 'stream'
      ? `stream "${streamId}" already has ${pending} upload addresses open, at most ${MAX_STREAM_PENDING_UPLOADS}`
      : `the server already has ${pending} upload addresses open, at most ${MAX_PENDING_UPLOADS}`;
  return new ProtocolError('limit-exceeded', `${where}; retry once some have lapsed`);
}
