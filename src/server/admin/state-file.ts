import { readFile } from 'node:fs/promises';
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { parseIsoDateTime } from '../../protocol/dates.js';
import { STATE_NEEDS_MEMORY, type StateDocument, type StateMedia } from '../../protocol/state.js';
import { CONTENT_TYPES } from '../../protocol/types.js';
import type { AdjustableClock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Seed } from '../service/seed.js';
import { seedDigest } from '../stores/seed-catalog.js';
import { isSnapshotting, storedPost, type PostRecord, type Snapshotting, type StoreSnapshot } from '../stores/store.js';
import { DocumentError } from '../document-error.js';
import { realPathOf, removeInterruptedWrites, StateLock, StateLockError, writeAtomically } from './state-lock.js';
import { MediaFolder, mediaEntries } from './state-media.js';

export const STATE_FORMAT = 'stream-posts-state';
export const STATE_VERSION = 1;
/**
 * A change is saved this long after it happened, so a burst of posts costs one write; a
 * crash (not a SIGTERM, SIGINT or close(), which save at once) loses at most the changes of
 * this last second and of a write under way.
 */
export const STATE_SAVE_DELAY_MS = 1_000;

const englishMessages = en().localeError;

/** Why a state file cannot be used: `file` names it; nothing was changed. */
export class StateFileError extends DocumentError {
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super('invalid-state', `state file ${file}`, detail, options);
  }
}

const isoTime = z
  .string()
  .check(z.refine((text: string) => parseIsoDateTime(text) !== undefined, 'expected an ISO 8601 date-time'));

const postSchema = z.strictObject({
  id: z.string().check(z.minLength(1)),
  streamId: z.string(),
  streamName: z.string(),
  text: z.string(),
  contentType: z.enum(CONTENT_TYPES),
  createdAt: isoTime,
  releaseAt: z.nullable(isoTime),
  hidden: z.boolean(),
  customTarget: z.nullable(z.string()),
  metadata: z.optional(z.record(z.string(), z.unknown())),
});

const documentSchema = z.strictObject({
  format: z.literal(STATE_FORMAT),
  version: z.literal(STATE_VERSION),
  seed: z.string(),
  savedAt: isoTime,
  clockOffsetMs: z.int().check(z.gte(0)),
  postCount: z.int().check(z.gte(0)),
  streams: z.record(z.string(), z.array(postSchema)),
  held: z.array(postSchema),
  pendingReleases: z.array(z.strictObject({ postId: z.string(), releaseAt: isoTime })),
  idempotencyKeys: z.array(
    z.strictObject({
      streamId: z.string(),
      keyDigest: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'expected a SHA-256 digest in hex')),
      postId: z.string(),
      expiresAt: isoTime,
    }),
  ),
  customTargets: z.optional(z.record(z.string(), z.record(z.string(), z.array(z.string())))),
  media: z.optional(
    z.array(
      z.strictObject({
        id: z.string().check(z.minLength(1)),
        postId: z.string(),
        type: z.string(),
        size: z.int().check(z.gte(0)),
        sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'expected a SHA-256 digest in hex')),
      }),
    ),
  ),
});

export type { StateDocument };
// The schema reads exactly the published type (checked both ways), which names no zod type.
const schemaIsDocument: (document: z.output<typeof documentSchema>) => StateDocument = (document) => document;
const documentIsSchema: (document: StateDocument) => z.output<typeof documentSchema> = (document) => document;
void schemaIsDocument;
void documentIsSchema;

/** The state of a store and clock as a document. */
export function stateDocument(snapshot: StoreSnapshot, clockOffsetMs: number, fingerprint: string): StateDocument {
  const iso = (ms: number) => new Date(ms).toISOString();
  const wire = (post: PostRecord) => storedPost(post) as StateDocument['held'][number];
  return {
    format: STATE_FORMAT,
    version: STATE_VERSION,
    seed: fingerprint,
    savedAt: new Date().toISOString(),
    clockOffsetMs,
    postCount: snapshot.postCount,
    streams: Object.fromEntries(Object.entries(snapshot.history).map(([id, posts]) => [id, posts.map(wire)])),
    held: snapshot.held.map(wire),
    pendingReleases: snapshot.pendingReleases.map(({ postId, releaseAt }) => ({ postId, releaseAt: iso(releaseAt) })),
    idempotencyKeys: snapshot.idempotencyKeys.map((entry) => ({ ...entry, expiresAt: iso(entry.expiresAt) })),
    ...(snapshot.customTargets === undefined ? {} : { customTargets: snapshot.customTargets }),
    ...(snapshot.media === undefined ? {} : { media: mediaEntries(snapshot.media) }),
  };
}

/** Checks saved selections against the seed: each names a user, a custom stream and targets that stream offers. */
function checkSelections(
  selections: NonNullable<StateDocument['customTargets']>,
  seed: Seed,
  fail: (detail: string) => never,
): void {
  const users = new Map(seed.users.map((user) => [user.id, user]));
  const streams = new Map(seed.streams.map((stream) => [stream.id, stream]));
  for (const [userId, byStream] of Object.entries(selections)) {
    const user = users.get(userId);
    if (!user) fail(`customTargets.${userId}: the seed has no such user`);
    for (const [streamId, targets] of Object.entries(byStream)) {
      const at = `customTargets.${userId}.${streamId}`;
      const stream = streams.get(streamId);
      if (!stream?.custom) fail(`${at}: the seed has no custom stream "${streamId}"`);
      const unknown = targets.find((target) => !stream.customTargets.includes(target));
      if (unknown !== undefined) fail(`${at}: stream "${streamId}" offers no target "${unknown}"`);
    }
  }
}

function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) => (typeof part === 'number' ? `${text}[${part}]` : `${text}.${String(part)}`),
    '',
  );
}

/** A document's posts as records, every reference checked against the seed and each other. */
function toSnapshot(document: StateDocument, seed: Seed, fail: (detail: string) => never): StoreSnapshot {
  const streams = new Map(seed.streams.map((stream) => [stream.id, stream]));
  const byId = new Map<string, PostRecord>();
  const record = (post: StateDocument['held'][number], at: string): PostRecord => {
    const stream = streams.get(post.streamId);
    if (!stream) fail(`${at}.streamId: the seed has no stream "${post.streamId}"`);
    if (byId.has(post.id)) fail(`${at}.id: post "${post.id}" appears twice`);
    if (post.hidden && post.releaseAt === null) fail(`${at}.releaseAt: a hidden post needs its release time`);
    const parsed: PostRecord = {
      id: post.id,
      streamId: post.streamId,
      streamName: stream.name,
      text: post.text,
      contentType: post.contentType,
      createdAt: parseIsoDateTime(post.createdAt)!,
      releaseAt: post.releaseAt === null ? null : parseIsoDateTime(post.releaseAt)!,
      customTarget: post.customTarget,
      ...(post.metadata === undefined ? {} : { metadata: post.metadata }),
      hidden: post.hidden,
    };
    byId.set(parsed.id, parsed);
    return parsed;
  };
  const history: Record<string, PostRecord[]> = {};
  for (const [streamId, posts] of Object.entries(document.streams)) {
    if (!streams.has(streamId)) fail(`streams.${streamId}: the seed has no such stream`);
    history[streamId] = posts.map((post, i) => {
      if (post.streamId !== streamId) fail(`streams.${streamId}[${i}].streamId: is "${post.streamId}"`);
      return record(post, `streams.${streamId}[${i}]`);
    });
  }
  const held = document.held.map((post, i) => record(post, `held[${i}]`));
  const pending = new Set<string>();
  const pendingReleases = document.pendingReleases.map(({ postId, releaseAt }, i) => {
    const post = byId.get(postId);
    if (!post?.hidden) fail(`pendingReleases[${i}].postId: no hidden post "${postId}"`);
    pending.add(postId);
    return { postId, releaseAt: parseIsoDateTime(releaseAt)! };
  });
  for (const post of byId.values()) {
    if (post.hidden && !pending.has(post.id)) fail(`post "${post.id}" is hidden but has no pending release`);
  }
  const idempotencyKeys = document.idempotencyKeys.map((entry, i) => {
    if (byId.get(entry.postId)?.streamId !== entry.streamId) {
      fail(`idempotencyKeys[${i}].postId: no post "${entry.postId}" of stream "${entry.streamId}"`);
    }
    return { ...entry, expiresAt: parseIsoDateTime(entry.expiresAt)! };
  });
  if (document.customTargets !== undefined) checkSelections(document.customTargets, seed, fail);
  for (const [i, { postId }] of (document.media ?? []).entries()) {
    if (!byId.has(postId)) fail(`media[${i}].postId: no post "${postId}" in the file`);
  }
  return {
    postCount: document.postCount,
    history,
    held,
    pendingReleases,
    idempotencyKeys,
    ...(document.customTargets === undefined ? {} : { customTargets: document.customTargets }),
  };
}

/** Checks a state file's text against this version and this seed; throws StateFileError saying what is wrong. */
export function parseStateText(
  file: string,
  text: string,
  seed: Seed,
): { snapshot: StoreSnapshot; clockOffsetMs: number; media: StateMedia[] } {
  const fail = (detail: string): never => {
    throw new StateFileError(file, detail);
  };
  if (text.trim() === '') fail('is empty (truncated?); remove it to start from the seed');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StateFileError(file, `is not valid JSON, truncated or corrupt (${(error as Error).message})`, {
      cause: error,
    });
  }
  const head = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (head['format'] !== STATE_FORMAT) fail(`is not a stream-posts state file (no "format": "${STATE_FORMAT}")`);
  if (head['version'] !== STATE_VERSION) {
    fail(
      `is in state format version ${JSON.stringify(head['version'])}; this stream-posts reads version ${STATE_VERSION}`,
    );
  }
  if (head['seed'] !== seedDigest(seed)) {
    fail('was saved by a serve with another seed; start with the seed it was saved with, or name another state file');
  }
  const result = documentSchema.safeParse(value, { error: englishMessages });
  if (!result.success) {
    const issue = result.error.issues[0];
    fail(`${pathOf(issue?.path ?? []).slice(1) || 'the document'}: ${issue?.message ?? 'invalid'}`);
  }
  const document = result.data!;
  return {
    snapshot: toSnapshot(document, seed, fail),
    clockOffsetMs: document.clockOffsetMs,
    media: document.media ?? [],
  };
}

function writeError(file: string, error: unknown): StateFileError {
  const code = (error as NodeJS.ErrnoException).code;
  return new StateFileError(file, `cannot be written (${code ?? (error as Error).message})`, { cause: error });
}

export interface StateFileOptions {
  file: string;
  seed: Seed;
  /** The store whose state the file keeps (`snapshotsOf` checks that it can). */
  store: Snapshotting;
  clock: AdjustableClock;
  logger: Logger;
}

/** The store, checked to keep its state in this process, as a state file needs: TypeError otherwise. */
export function snapshotsOf<T extends object>(store: T): T & Snapshotting {
  if (!isSnapshotting(store)) throw new TypeError(`state ${STATE_NEEDS_MEMORY}`);
  return store;
}

/**
 * Keeps a memory store's state in a file across restarts: loaded at start, saved a second
 * after a change (one write at a time, later changes folded into the next write) and at
 * close. A file that cannot be used stops the start; it is never overwritten.
 */
export class StateFile {
  readonly #options: StateFileOptions;
  readonly #store: Snapshotting;
  readonly #fingerprint: string;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #stopClock: (() => void) | undefined;
  #closed = false;
  #lock: StateLock | undefined;
  /** Where the file really is (links followed): what is locked, read and written. */
  #real: string | undefined;
  #media: MediaFolder | undefined;

  constructor(options: StateFileOptions) {
    this.#store = options.store;
    this.#options = options;
    this.#fingerprint = seedDigest(options.seed);
  }

  get file(): string {
    return this.#options.file;
  }

  /** The state as a document, as it would be saved now. */
  document(): StateDocument {
    return stateDocument(this.#store.exportSnapshot(), this.#options.clock.offsetMs, this.#fingerprint);
  }

  /**
   * Takes the file's lock (StateLockError when a live process holds it), removes what killed
   * writes left, loads the file if it exists, then saves at once, so an unwritable place
   * fails the start, not the stop. A failed open leaves the lock free.
   */
  async open(): Promise<{ restored: boolean; posts: number; pendingReleases: number; idempotencyKeys: number }> {
    const { file } = this.#options;
    const lock = await realPathOf(file)
      .then((real) => StateLock.acquire(real, file))
      .catch((error: unknown) => {
        if (error instanceof StateLockError) throw error;
        throw writeError(file, error);
      });
    this.#real = lock.file;
    this.#media = new MediaFolder(lock.file);
    try {
      const leftovers = await removeInterruptedWrites(lock.file);
      if (leftovers.length > 0) {
        this.#options.logger.log('info', 'temporary files of interrupted writes removed', {
          file: this.#options.file,
          removed: leftovers.length,
        });
      }
      const summary = await this.#load();
      this.#lock = lock;
      return summary;
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  async #load(): Promise<{ restored: boolean; posts: number; pendingReleases: number; idempotencyKeys: number }> {
    const { file, seed, clock } = this.#options;
    let text: string | undefined;
    try {
      text = await readFile(this.#real!, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new StateFileError(file, `cannot be read (${code ?? (error as Error).message})`);
    }
    let summary = { restored: false, posts: 0, pendingReleases: 0, idempotencyKeys: 0 };
    if (text !== undefined) {
      const { snapshot, clockOffsetMs, media } = parseStateText(file, text, seed);
      const fail = (detail: string): never => {
        throw new StateFileError(file, detail);
      };
      snapshot.media = await this.#media!.load(media, fail);
      clock.syncOffset(clockOffsetMs);
      try {
        this.#store.importSnapshot(snapshot);
      } catch (error) {
        if (error instanceof RangeError) fail(error.message);
        throw error;
      }
      summary = {
        restored: true,
        posts: snapshot.postCount,
        pendingReleases: snapshot.pendingReleases.length,
        idempotencyKeys: snapshot.idempotencyKeys.length,
      };
    }
    try {
      await this.#save();
    } catch (error) {
      throw writeError(file, error);
    }
    this.#stopClock = clock.onAdvance(() => this.changed());
    return summary;
  }

  /** Something changed: it is saved within STATE_SAVE_DELAY_MS. */
  changed(): void {
    if (this.#closed || this.#timer !== undefined || this.#stopClock === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#save().catch((error: NodeJS.ErrnoException) =>
        this.#options.logger.log('error', 'state not saved', {
          file: this.#options.file,
          reason: error.code ?? error.message,
        }),
      );
    }, STATE_SAVE_DELAY_MS);
    // A pending save must not keep a finished process alive: close() saves anyway.
    this.#timer.unref();
  }

  #save(): Promise<void> {
    const next = this.#writing
      .catch(() => {})
      .then(async () => {
        const snapshot = this.#store.exportSnapshot();
        const media = snapshot.media ?? [];
        // The bytes first, the listing then, the bytes no longer listed last: a crash between
        // any two leaves a state file whose media are all there.
        await this.#media!.keep(media);
        await writeAtomically(
          this.#real!,
          JSON.stringify(stateDocument(snapshot, this.#options.clock.offsetMs, this.#fingerprint)),
        );
        await this.#media!.prune(media);
      });
    this.#writing = next;
    return next;
  }

  /** The last save, then the lock is given up; rejects when the save failed, so a stop that loses state says so. */
  async close(): Promise<void> {
    if (this.#closed) return this.#writing;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#stopClock?.();
    if (this.#stopClock === undefined) return;
    try {
      await this.#save();
    } finally {
      await this.#lock?.release();
    }
  }
}
