import { StreamPostsError } from '../../index.js';
import { commandFrame, type PublishOutcome } from '../../api/internal.js';
import { parseIsoDateTime } from '../../protocol/dates.js';
import type { PublishArgs } from '../../protocol/types.js';
import { jsonLine } from '../../render/json.js';
import type { StatusReporter } from '../../render/status.js';
import { safeLine } from '../../render/text.js';
import { requireKey } from '../common.js';
import { httpWhere, withoutKey, wsWhere } from '../describe.js';
import { EXIT, ExitError, usageError } from '../exit.js';
import { checkContent, readContent } from '../post-content.js';
import type { PublishSession } from '../publish-one.js';
import {
  formatReleaseTime,
  isRelativeReleaseAt,
  localClockNotice,
  RELEASE_AT_FORMS,
  resolveReleaseAt,
  serviceClock,
} from '../release-at.js';

/** The longest `post` waits for the service's clock (`connected.serverTime`) for a relative `--release-at`. */
const SERVICE_CLOCK_WAIT_MS = 1_000;
import { STDIN_KEY_SOURCE } from '../settings.js';
import { validatePost } from '../validate-post.js';
import type { PostOptions } from '../post-options.js';

// Network, terminal and prompt modules load only on the paths that use them:
// `post --dry-run` in a script should start as fast as the runtime allows.

export type { PostOptions };

const MISSING_CONTENT =
  'no content: give it as an argument (- reads standard input), with --file FILE, or pipe it to standard input';

function canPrompt(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

/** Checks the form of `--release-at` before connecting: a typo is exit 2 without touching the network. */
function checkReleaseAtForm(releaseAt: string | undefined): void {
  if (releaseAt === undefined || parseIsoDateTime(resolveReleaseAt(releaseAt, Date.now())) !== undefined) return;
  throw usageError(`invalid post: --release-at "${safeLine(releaseAt)}" is not ${RELEASE_AT_FORMS}`);
}

/** Why no stream is known, and how to name one. */
function missingStream(session: PublishSession | undefined, via: 'ws' | 'rest'): ExitError {
  const profileHint = 'give --stream ID, or store a default with: stream-posts config set NAME --stream ID';
  if (session === undefined) return usageError(`missing --stream ID (--dry-run does not connect): ${profileHint}`);
  if (via === 'rest')
    return usageError(`missing --stream ID (the REST form cannot learn the key's stream): ${profileHint}`);
  // A service that sends this contract's additions (serverTime) names the stream of every stream key.
  if (session.serverTime !== undefined) {
    return usageError(
      'missing --stream ID: the service says this key publishes to no stream (a reader key); publish with the stream key',
    );
  }
  return usageError(`missing --stream ID: the service did not say which stream this key publishes to; ${profileHint}`);
}

/**
 * Before the first question: a key the service says cannot publish to the stream given
 * ends the command now, not after everything was typed.
 */
function checkPublishable(session: PublishSession, streamId: string | undefined, fromFlag: boolean): void {
  if (streamId === undefined) return;
  if (session.streamId !== undefined && session.streamId !== streamId) {
    const leaveOut = fromFlag ? 'leave out --stream' : "change the profile's stream (config set NAME --stream ID)";
    throw usageError(
      `this key publishes to ${safeLine(session.streamId)} only, not to ${safeLine(streamId)}: use that stream's key, or ${leaveOut}`,
    );
  }
  if (session.streamId === undefined && session.serverTime !== undefined) {
    throw usageError(
      `this key publishes to no stream (a reader key), not to ${safeLine(streamId)}: publish with the stream key`,
    );
  }
}

/** `post`: one post from flags, a file, standard input or prompts (`--batch` is post-batch.ts). */
export async function post(options: PostOptions): Promise<number> {
  const keyFromStdin = options.settings.keySource === STDIN_KEY_SOURCE;
  const content = await readContent({ content: options.content, file: options.file, keyFromStdin });
  if (content !== undefined) checkContent(content);
  // Asked last: reading process.stdin builds its stream, which a dry run does not need.
  const prompting = !options.dryRun && !options.json && canPrompt();
  if (content === undefined && !prompting) throw usageError(MISSING_CONTENT);
  checkReleaseAtForm(options.releaseAt);
  const fields: Record<string, unknown> = {};
  if (options.customTarget !== undefined) fields['customTarget'] = options.customTarget;
  if (options.idempotencyKey !== undefined) fields['idempotencyKey'] = options.idempotencyKey;
  let streamId = options.stream ?? options.settings.stream;

  if (options.dryRun) {
    if (streamId === undefined) throw missingStream(undefined, options.via);
    const args = { ...fields, streamId, content, contentType: options.contentType, releaseAt: options.releaseAt };
    const validated = validatePost(withoutUndefined(args), options, Date.now());
    process.stdout.write(`${JSON.stringify(commandFrame(validated))}\n`);
    return EXIT.ok;
  }

  const apiKey = requireKey(options.settings);
  const { statusFor } = await import('../status.js');
  const status = await statusFor(options, true);
  let session: PublishSession | undefined;
  try {
    // Connected before anything is asked: a refused key or a stopped service ends the command at once.
    // Without a stream, or before questions, the service's first word is heard first: a
    // `connected` names a stream key's stream. Otherwise the post goes as the socket opens.
    const listenFirst = streamId === undefined || (prompting && content === undefined);
    // A relative release time is counted on the service's clock (`/_admin/clock` moves it):
    // its `connected` is awaited briefly for that.
    const relative = options.releaseAt !== undefined && isRelativeReleaseAt(options.releaseAt);
    session = await openSession(
      options,
      apiKey,
      status,
      prompting && (content === undefined || streamId === undefined),
      listenFirst || relative,
      listenFirst ? undefined : SERVICE_CLOCK_WAIT_MS,
    );
    streamId ??= session.streamId;
    if (relative && session.serverTime === undefined) {
      status.info(
        `${options.via === 'rest' ? 'over REST the service does not say its time' : `the service did not say its time (connected.serverTime) within ${SERVICE_CLOCK_WAIT_MS / 1000} s`}: --release-at ${options.releaseAt} counts from this machine's clock`,
      );
    } else if (relative) {
      const notice = localClockNotice(session.serverTime, `--release-at ${options.releaseAt}`);
      if (notice !== undefined) status.info(notice);
    }
    const now = serviceClock(session.serverTime);
    let args: PublishArgs;
    if (content === undefined || streamId === undefined) {
      if (!prompting || (streamId === undefined && session.serverTime !== undefined))
        throw missingStream(session, options.via);
      checkPublishable(session, streamId, options.stream !== undefined);
      const { askForPost } = await import('../post-prompt.js');
      status.stop();
      args = await askForPost(options, { streamId, content, fields }, now, apiKey);
    } else {
      const given = { ...fields, streamId, content, contentType: options.contentType, releaseAt: options.releaseAt };
      args = validatePost(withoutUndefined(given), options, now());
    }
    return await send(options, session, args, status);
  } finally {
    await session?.close();
    status.stop();
  }
}

function withoutUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

async function openSession(
  options: PostOptions,
  apiKey: string,
  status: StatusReporter,
  checkFirst: boolean,
  listenFirst: boolean,
  firstWordGraceMs: number | undefined,
): Promise<PublishSession> {
  if (options.via === 'rest') {
    const { openRestSession } = await import('../publish-rest.js');
    status.connecting(withoutKey(options.settings, options.settings.endpoint.httpBase));
    return openRestSession(options, apiKey, checkFirst);
  }
  const { openPublishSession } = await import('../publish-one.js');
  return openPublishSession(options, apiKey, status, listenFirst, firstWordGraceMs);
}

async function send(
  options: PostOptions,
  session: PublishSession,
  validated: PublishArgs,
  status: StatusReporter,
): Promise<number> {
  const { withIdempotencyKey } = await import('../../api/internal.js');
  const args = withIdempotencyKey(validated);
  if (options.verbose) {
    const via = options.via === 'rest' ? httpWhere(options.settings) : wsWhere(options.settings);
    status.info(`publishing to ${args.streamId} via ${via} with idempotency key ${String(args.idempotencyKey)}`);
  }
  let outcome: PublishOutcome;
  try {
    outcome = await session.publish(args);
  } catch (error) {
    // The post may have been published: a script reads the key to publish it again at most once.
    if (options.json && error instanceof StreamPostsError && error.idempotencyKey !== undefined) {
      const { code, message, idempotencyKey } = error;
      process.stdout.write(`${jsonLine({ error: { code, message, idempotencyKey } })}\n`);
    }
    throw error;
  }
  status.stop();
  if (!outcome.ok) {
    const http = outcome.status !== undefined ? `HTTP ${outcome.status} ` : '';
    throw new ExitError(EXIT.failed, `the service refused the post: ${http}${outcome.code}: ${outcome.message}`);
  }
  const duplicate = outcome.duplicate && outcome.attempts <= 1;
  if (options.json) {
    process.stdout.write(`${jsonLine({ post: outcome.post, duplicate })}\n`);
    return EXIT.ok;
  }
  const { post: published } = outcome;
  const hiddenUntil =
    published.hidden && published.releaseAt
      ? formatReleaseTime(published.releaseAt, { sameDay: true, now: Date.parse(published.createdAt) })
      : undefined;
  if (process.stdout.isTTY === true) {
    // A person reads this; scripts read the bare id, which is what a pipe or a file gets.
    const name = safeLine(published.streamName || published.streamId) || safeLine(args.streamId);
    const when = hiddenUntil === undefined ? '' : ` (hidden until ${hiddenUntil})`;
    const verb = duplicate ? 'already published' : 'published';
    process.stdout.write(`${verb} ${safeLine(published.id)} to ${name}${when}\n`);
  } else {
    process.stdout.write(`${safeLine(published.id)}\n`);
    if (hiddenUntil !== undefined) status.info(`hidden until ${hiddenUntil}`);
  }
  if (duplicate && !options.quiet) {
    status.warn(
      `duplicate: an earlier post with idempotency key ${args.idempotencyKey} was returned; nothing new was published`,
    );
  }
  return EXIT.ok;
}
