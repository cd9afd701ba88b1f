import type { ContentType } from './types.js';

/** A post as a state file keeps it: its text always present (hidden posts' too). */
export interface StatePost {
  id: string;
  streamId: string;
  streamName: string;
  text: string;
  contentType: ContentType;
  createdAt: string;
  releaseAt: string | null;
  hidden: boolean;
  customTarget: string | null;
  metadata?: Record<string, unknown>;
}

/**
 * A state file's contents, and what `GET /_admin/export` answers: posts, pending releases,
 * idempotency keys as digests and the clock offset; never a key.
 */
export interface StateDocument {
  format: 'stream-posts-state';
  version: 1;
  /** SHA-256 of the seed, its keys digested first. */
  seed: string;
  savedAt: string;
  clockOffsetMs: number;
  postCount: number;
  /** Each stream's history, oldest first. */
  streams: Record<string, StatePost[]>;
  /** Hidden posts not yet released. */
  held: StatePost[];
  pendingReleases: { postId: string; releaseAt: string }[];
  idempotencyKeys: { streamId: string; keyDigest: string; postId: string; expiresAt: string }[];
  /**
   * Every user's selected targets, user id → custom stream id → targets (they change through
   * `POST /v1/streams/{id}/custom-targets`); a file without it keeps the seed's.
   */
  customTargets?: Record<string, Record<string, string[]>>;
  /**
   * Uploaded media of the posts above: the bytes are kept beside the file (`FILE.media/`),
   * one file each, named by their SHA-256; a file without it keeps none.
   */
  media?: StateMedia[];
}

/** One uploaded item, as the state file lists it (its bytes in `FILE.media/<sha256>`). */
export interface StateMedia {
  /** Where it is served: `/v1/media/{id}`. */
  id: string;
  postId: string;
  type: string;
  size: number;
  sha256: string;
}

/**
 * Why a state file and a Redis store are refused together, after the name of the option or
 * flag (`state …`, `--state …`): one wording wherever it is refused.
 */
export const STATE_NEEDS_MEMORY =
  'cannot be used with a redis:// store: it keeps the memory store across restarts, and a Redis store keeps its state in Redis, which persists by itself (see its RDB/AOF settings)';
