import { ProtocolError } from '../../protocol/errors.js';
import type { Awaitable } from './store.js';

/** All media one service keeps, together: past it an upload is refused and nothing stored. */
export const MAX_TOTAL_MEDIA_BYTES = 256 * 1024 * 1024;
/** Upload addresses handed out and not yet used or lapsed, for the whole service. */
export const MAX_PENDING_UPLOADS = 1_000;
/** How long a lapsed address still answers 410 (not 404), so a late uploader learns why. */
export const LAPSED_KEPT_MS = 60 * 60_000;

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
  | { readonly ok: false; readonly why: 'not-found' | 'used' | 'lapsed' | 'busy' | 'full' }
  | { readonly ok: false; readonly why: 'type'; readonly type: string };

export interface MediaItem {
  readonly type: string;
  readonly bytes: Buffer;
}

/**
 * Where upload addresses and uploaded media are kept: in this process (the memory store), or
 * in Redis, so that with several instances an upload and a `GET` may reach any of them. Each
 * rule (one upload per address, within its window, under the caps) holds for the whole service.
 */
export interface MediaKeeper {
  /** Opens these addresses; `limit-exceeded` past MAX_PENDING_UPLOADS, and nothing opened. */
  reserve(slots: readonly NewSlot[], now: number): Awaitable<void>;
  /** Withdraws addresses never given out (the publish they were for failed or was a repeat). */
  cancel(tokens: readonly string[]): Awaitable<void>;
  /**
   * Takes an address for one upload of `type` (what the request says it sends), or says why
   * not; `declaredBytes` (the request's Content-Length, -1 when absent) is checked against
   * the room left before any byte is read.
   */
  claim(token: string, now: number, type: string, declaredBytes: number): Awaitable<Claim>;
  /** An upload that failed (too large, too slow, cut off): the address takes another try. */
  unclaim(token: string): Awaitable<void>;
  /** Keeps the bytes of a claimed address; false, with the address open again, when there is no room. */
  store(token: string, mediaId: string, bytes: Buffer): Awaitable<boolean>;
  item(mediaId: string): Awaitable<MediaItem | undefined>;
}

export function tooManyUploads(pending: number): ProtocolError {
  return new ProtocolError(
    'limit-exceeded',
    `the server already waits for ${pending} uploads, at most ${MAX_PENDING_UPLOADS}; retry later`,
  );
}

interface Slot {
  readonly type: string;
  readonly mediaId: string;
  readonly expiresAt: number;
  state: 'pending' | 'uploading' | 'done';
}

/** Media kept in this process's memory (the memory store, or a single instance). */
export class MemoryMedia implements MediaKeeper {
  // Insertion order is expiry order (one window, a clock that only moves forward).
  readonly #slots = new Map<string, Slot>();
  readonly #items = new Map<string, MediaItem>();
  #pending = 0;
  #storedBytes = 0;

  reserve(slots: readonly NewSlot[], now: number): void {
    this.#sweep(now);
    if (this.#pending + slots.length > MAX_PENDING_UPLOADS) throw tooManyUploads(this.#pending);
    for (const { token, type, mediaId, expiresAt } of slots) {
      this.#slots.set(token, { type, mediaId, expiresAt, state: 'pending' });
      this.#pending += 1;
    }
  }

  cancel(tokens: readonly string[]): void {
    for (const token of tokens) {
      if (this.#slots.get(token)?.state === 'pending') this.#pending -= 1;
      this.#slots.delete(token);
    }
  }

  claim(token: string, now: number, type: string, declaredBytes: number): Claim {
    this.#sweep(now);
    const slot = this.#slots.get(token);
    if (!slot) return { ok: false, why: 'not-found' };
    if (slot.state === 'done') return { ok: false, why: this.#items.has(slot.mediaId) ? 'used' : 'lapsed' };
    if (slot.expiresAt <= now) return { ok: false, why: 'lapsed' };
    if (slot.state === 'uploading') return { ok: false, why: 'busy' };
    if (slot.type !== type) return { ok: false, why: 'type', type: slot.type };
    if (declaredBytes >= 0 && this.#storedBytes + declaredBytes > MAX_TOTAL_MEDIA_BYTES)
      return { ok: false, why: 'full' };
    slot.state = 'uploading';
    return { ok: true, type: slot.type, mediaId: slot.mediaId };
  }

  unclaim(token: string): void {
    const slot = this.#slots.get(token);
    if (slot?.state === 'uploading') slot.state = 'pending';
  }

  store(token: string, mediaId: string, bytes: Buffer): boolean {
    const slot = this.#slots.get(token);
    if (slot?.state !== 'uploading') return false;
    if (this.#storedBytes + bytes.length > MAX_TOTAL_MEDIA_BYTES) {
      slot.state = 'pending';
      return false;
    }
    slot.state = 'done';
    this.#pending -= 1;
    this.#storedBytes += bytes.length;
    this.#items.set(mediaId, { type: slot.type, bytes });
    return true;
  }

  item(mediaId: string): MediaItem | undefined {
    return this.#items.get(mediaId);
  }

  #sweep(now: number): void {
    for (const [token, slot] of this.#slots) {
      if (slot.expiresAt > now) break;
      if (slot.state === 'pending') {
        this.#pending -= 1;
        // Kept as lapsed a while (answering 410), then forgotten.
        slot.state = 'done';
      }
      if (slot.expiresAt + LAPSED_KEPT_MS <= now && !this.#items.has(slot.mediaId)) this.#slots.delete(token);
    }
  }
}
