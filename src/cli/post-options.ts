import type { ContentType } from '../protocol/types.js';
import type { CommonOptions } from './common.js';

/** What `post`'s flags come to, for the command and its prompt and batch paths. */
export interface PostOptions extends CommonOptions {
  content: string | undefined;
  stream: string | undefined;
  contentType: ContentType;
  /** `--markdown` or `--content-type` was given: a prompt does not ask for the type. */
  contentTypeGiven: boolean;
  releaseAt: string | undefined;
  /** A `--release-at` in the past publishes at once instead of being refused. */
  allowPast: boolean;
  customTarget: string | undefined;
  idempotencyKey: string | undefined;
  file: string | undefined;
  via: 'ws' | 'rest';
  dryRun: boolean;
  batch: boolean;
  window: number;
}
