import {
  LAPSED_KEPT_MS,
  MAX_PENDING_UPLOADS,
  MAX_STREAM_MEDIA_BYTES,
  MAX_STREAM_PENDING_UPLOADS,
  MAX_TOTAL_MEDIA_BYTES,
  tooManyUploads,
  type Claim,
  type MediaItem,
  type MediaKeeper,
  type MediaOwner,
  type MediaSnapshot,
  type NewSlot,
  type Stored,
} from '../media-keeper.js';

interface Slot extends MediaOwner {
  readonly type: string;
  readonly mediaId: string;
  readonly expiresAt: number;
  uploading: boolean;
}

interface StreamUse {
  open: number;
  bytes: number;
}

/** Media kept in this process's memory (the memory store, or a single instance). */
export class MemoryMedia implements MediaKeeper {
  // Open addresses, then lapsed ones (answering 410 a while): in both, insertion order is
  // expiry order (one window, a clock that only moves forward).
  readonly #open = new Map<string, Slot>();
  readonly #lapsed = new Map<string, Slot>();
  readonly #items = new Map<string, MediaItem>();
  readonly #byStream = new Map<string, StreamUse>();
  /** The addresses and media of each stored post that has any. */
  readonly #byPost = new Map<string, { token?: string; mediaId: string }[]>();
  #bytes = 0;
  readonly #stored: () => void;

  /** `stored`: told after an upload is kept (what a state file saves changed). */
  constructor(stored: () => void = () => {}) {
    this.#stored = stored;
  }

  reserve(slots: readonly NewSlot[], owner: MediaOwner, now: number): void {
    this.#sweep(now);
    const use = this.#use(owner.streamId);
    if (this.#open.size + slots.length > MAX_PENDING_UPLOADS)
      throw tooManyUploads('service', this.#open.size, owner.streamId);
    if (use.open + slots.length > MAX_STREAM_PENDING_UPLOADS) throw tooManyUploads('stream', use.open, owner.streamId);
    for (const { token, type, mediaId, expiresAt } of slots) {
      this.#open.set(token, { ...owner, type, mediaId, expiresAt, uploading: false });
    }
    use.open += slots.length;
  }

  cancel(tokens: readonly string[]): void {
    for (const token of tokens) this.#close(token);
  }

  attach(tokens: readonly string[], postId: string): void {
    const media = tokens.flatMap((token) => {
      const slot = this.#open.get(token);
      return slot ? [{ token, mediaId: slot.mediaId }] : [];
    });
    if (media.length > 0) this.#byPost.set(postId, media);
  }

  /** Whether the post has media here (a post without them needs no keeping when it leaves). */
  holds(postId: string): boolean {
    return this.#byPost.has(postId);
  }

  /** The post left the history: its addresses close and its media are gone. */
  forget(postId: string): void {
    for (const { token, mediaId } of this.#byPost.get(postId) ?? []) {
      if (token !== undefined) {
        this.#close(token);
        this.#lapsed.delete(token);
      }
      const item = this.#items.get(mediaId);
      if (!item) continue;
      this.#items.delete(mediaId);
      this.#bytes -= item.bytes.length;
      this.#use(item.streamId).bytes -= item.bytes.length;
    }
    this.#byPost.delete(postId);
  }

  /** The media of these posts, as a snapshot keeps them. */
  export(postIds: ReadonlySet<string>): MediaSnapshot[] {
    return [...this.#byPost].flatMap(([postId, media]) =>
      postIds.has(postId)
        ? media.flatMap(({ mediaId }) => {
            const item = this.#items.get(mediaId);
            return item ? [{ mediaId, postId, type: item.type, bytes: item.bytes }] : [];
          })
        : [],
    );
  }

  /**
   * Takes a snapshot's media back, of posts `postOf` knows (their addresses are not kept: a
   * restart closes them); RangeError past the caps an upload is held to.
   */
  import(media: readonly MediaSnapshot[], postOf: (id: string) => MediaOwner | undefined): void {
    for (const { mediaId, postId, type, bytes } of media) {
      const owner = postOf(postId);
      if (!owner) continue;
      const use = this.#use(owner.streamId);
      if (this.#bytes + bytes.length > MAX_TOTAL_MEDIA_BYTES || use.bytes + bytes.length > MAX_STREAM_MEDIA_BYTES) {
        throw new RangeError(`media ${mediaId}: more media than the server keeps`);
      }
      this.#items.set(mediaId, { type, bytes, streamId: owner.streamId, releaseAt: owner.releaseAt });
      this.#bytes += bytes.length;
      use.bytes += bytes.length;
      this.#byPost.set(postId, [...(this.#byPost.get(postId) ?? []), { mediaId }]);
    }
  }

  clear(): void {
    this.#open.clear();
    this.#lapsed.clear();
    this.#items.clear();
    this.#byStream.clear();
    this.#byPost.clear();
    this.#bytes = 0;
  }

  claim(token: string, now: number, type: string, declaredBytes: number): Claim {
    this.#sweep(now);
    const slot = this.#open.get(token);
    if (!slot) return { ok: false, why: this.#lapsed.has(token) ? 'lapsed' : 'not-found' };
    if (slot.uploading) return { ok: false, why: 'busy' };
    if (slot.type !== type) return { ok: false, why: 'type', type: slot.type };
    if (declaredBytes >= 0) {
      const cap = this.#over(slot, declaredBytes);
      if (cap !== undefined) return { ok: false, why: 'full', cap };
    }
    slot.uploading = true;
    return { ok: true, type: slot.type, mediaId: slot.mediaId };
  }

  unclaim(token: string): void {
    const slot = this.#open.get(token) ?? this.#lapsed.get(token);
    if (slot) slot.uploading = false;
  }

  store(token: string, mediaId: string, bytes: Buffer): Stored {
    // An upload begun in time completes though its address lapsed meanwhile.
    const slot = this.#open.get(token) ?? this.#lapsed.get(token);
    if (!slot?.uploading) return { ok: false, why: 'gone' };
    slot.uploading = false;
    const cap = this.#over(slot, bytes.length);
    if (cap !== undefined) return { ok: false, why: 'full', cap };
    const change = bytes.length - (this.#items.get(mediaId)?.bytes.length ?? 0);
    this.#bytes += change;
    this.#use(slot.streamId).bytes += change;
    this.#items.set(mediaId, { type: slot.type, bytes, streamId: slot.streamId, releaseAt: slot.releaseAt });
    this.#stored();
    return { ok: true };
  }

  item(mediaId: string): MediaItem | undefined {
    return this.#items.get(mediaId);
  }

  /** Which cap `bytes` in place of the slot's current item would pass, if any. */
  #over(slot: Slot, bytes: number): 'service' | 'stream' | undefined {
    const change = bytes - (this.#items.get(slot.mediaId)?.bytes.length ?? 0);
    if (this.#bytes + change > MAX_TOTAL_MEDIA_BYTES) return 'service';
    if (this.#use(slot.streamId).bytes + change > MAX_STREAM_MEDIA_BYTES) return 'stream';
    return undefined;
  }

  #use(streamId: string): StreamUse {
    let use = this.#byStream.get(streamId);
    if (!use) {
      use = { open: 0, bytes: 0 };
      this.#byStream.set(streamId, use);
    }
    return use;
  }

  #close(token: string): void {
    const slot = this.#open.get(token);
    if (!slot) return;
    this.#open.delete(token);
    this.#use(slot.streamId).open -= 1;
  }

  #sweep(now: number): void {
    for (const [token, slot] of this.#open) {
      if (slot.expiresAt > now) break;
      this.#close(token);
      this.#lapsed.set(token, slot);
    }
    for (const [token, { expiresAt }] of this.#lapsed) {
      if (expiresAt + LAPSED_KEPT_MS > now) break;
      this.#lapsed.delete(token);
    }
  }
}
