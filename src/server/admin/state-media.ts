// Uploaded media beside a state file (`FILE.media/`): the file lists each item, and its bytes
// are a file of their own named by their SHA-256, so a save writes only what is new and a
// file whose bytes changed is seen at load.
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { StateMedia } from '../../protocol/state.js';
import type { MediaSnapshot } from '../stores/media-keeper.js';
import { writeAtomically } from './state-lock.js';

// An item's bytes never change once uploaded (a new upload is a new Buffer): digested once.
const digests = new WeakMap<Buffer, string>();

function digestOf(bytes: Buffer): string {
  let digest = digests.get(bytes);
  if (digest === undefined) {
    digest = createHash('sha256').update(bytes).digest('hex');
    digests.set(bytes, digest);
  }
  return digest;
}

/** The state file's listing of a snapshot's media. */
export function mediaEntries(media: readonly MediaSnapshot[]): StateMedia[] {
  return media.map(({ mediaId, postId, type, bytes }) => ({
    id: mediaId,
    postId,
    type,
    size: bytes.length,
    sha256: digestOf(bytes),
  }));
}

/** The folder of one state file's media: `FILE.media/` beside the file's real path. */
export class MediaFolder {
  readonly path: string;
  /** The digests known to be on disk, whole: written by this process, or read back at load. */
  readonly #present = new Set<string>();

  constructor(file: string) {
    this.path = `${file}.media`;
  }

  /** Reads the listed items back; a missing or changed one throws naming it (its entry as `media[i]`). */
  async load(entries: readonly StateMedia[], fail: (detail: string) => never): Promise<MediaSnapshot[]> {
    const media: MediaSnapshot[] = [];
    for (const [i, { id, postId, type, size, sha256 }] of entries.entries()) {
      const bytes = await readFile(join(this.path, sha256)).catch(() => undefined);
      if (bytes === undefined || bytes.length !== size || digestOf(bytes) !== sha256) {
        fail(`media[${i}]: its bytes (${join(this.path, sha256)}) are missing or changed`);
      }
      this.#present.add(sha256);
      media.push({ mediaId: id, postId, type, bytes });
    }
    return media;
  }

  /** Writes the bytes not on disk yet, each atomically; before the state file that lists them. */
  async keep(media: readonly MediaSnapshot[]): Promise<void> {
    const missing = media.filter(({ bytes }) => !this.#present.has(digestOf(bytes)));
    if (missing.length === 0) return;
    await mkdir(this.path, { recursive: true, mode: 0o700 });
    for (const { bytes } of missing) {
      const digest = digestOf(bytes);
      await writeAtomically(join(this.path, digest), bytes);
      this.#present.add(digest);
    }
  }

  /** Removes what the saved state no longer lists (and what an interrupted write left); after the state file is written. */
  async prune(media: readonly MediaSnapshot[]): Promise<void> {
    const listed = new Set(media.map(({ bytes }) => digestOf(bytes)));
    const names = await readdir(this.path).catch(() => [] as string[]);
    for (const name of names.filter((each) => !listed.has(each))) {
      await unlink(join(this.path, name)).catch(() => {});
      this.#present.delete(name);
    }
  }
}
