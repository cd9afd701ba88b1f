import { readStdinText, readTextFile } from './files.js';
import { commandFrame } from '../client/publish-args.js';
import { resolveReleaseAt } from './release-at.js';
import { buildPublishArgs } from './validate-post.js';
import type { PublishOutcome } from '../client/publisher.js';
import { parseIsoDateTime } from '../protocol/dates.js';
import { ProtocolError } from '../protocol/errors.js';
import type { ContentType, PublishArgs } from '../protocol/types.js';
import { jsonLine } from '../render/json.js';
import { safeLine } from '../render/text.js';
import { requireKey, type CommonOptions } from './common.js';
import { wsWhere } from './describe.js';
import { EXIT, ExitError, usageError } from './exit.js';

// Network, terminal and prompt modules load only on the paths that use them:
// `post --dry-run` in a script should start as fast as the runtime allows.

export interface PostOptions extends CommonOptions {
  content: string | undefined;
  stream: string | undefined;
  contentType: ContentType;
  releaseAt: string | undefined;
  customTarget: string | undefined;
  idempotencyKey: string | undefined;
  file: string | undefined;
  via: 'ws' | 'rest';
  dryRun: boolean;
  batch: boolean;
  window: number;
}

const MISSING_CONTENT = 'no content: give it as an argument, with --file FILE, or --file - to read standard input';

async function readContent(options: PostOptions): Promise<string | undefined> {
  if (options.file === undefined) return options.content;
  if (options.content !== undefined) throw usageError('give the content as an argument or with --file, not both');
  return options.file === '-' ? readStdinText() : readTextFile(options.file, '--file');
}

function canPrompt(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

function validateArgs(fields: Record<string, unknown>, options: PostOptions): PublishArgs {
  try {
    return buildPublishArgs(fields, { streamId: options.stream, contentType: options.contentType });
  } catch (error) {
    if (error instanceof ProtocolError) {
      const relative = error.message.startsWith('releaseAt') ? ', or a time from now such as +10m, +2h, +1d' : '';
      throw usageError(`invalid post: ${error.message}${relative}`, { cause: error });
    }
    throw error;
  }
}

/** `post`: one post from flags, a file or prompts (`--batch` is post-batch.ts). */
export async function post(options: PostOptions): Promise<number> {
  let content = await readContent(options);
  let streamId = options.stream;
  let contentType = options.contentType;
  let releaseAt = options.releaseAt;
  let customTarget = options.customTarget;
  if (streamId === undefined || content === undefined) {
    if (!canPrompt() || options.json || options.dryRun)
      throw usageError(streamId === undefined ? 'missing --stream ID' : MISSING_CONTENT);
    const { isPromptCancelled } = await import('../render/prompts.js');
    const answers = await askForPost(options, { streamId, content, releaseAt }).catch((error: unknown) => {
      if (isPromptCancelled(error)) throw new ExitError(EXIT.usage, 'cancelled; nothing was published');
      throw error;
    });
    if (!answers) throw new ExitError(EXIT.usage, 'not confirmed; nothing was published');
    ({ streamId, content, contentType } = answers);
    releaseAt = answers.releaseAt ?? undefined;
    customTarget = answers.customTarget ?? undefined;
  }
  const fields: Record<string, unknown> = { streamId, content, contentType };
  if (releaseAt !== undefined) fields['releaseAt'] = releaseAt;
  if (customTarget !== undefined) fields['customTarget'] = customTarget;
  if (options.idempotencyKey !== undefined) fields['idempotencyKey'] = options.idempotencyKey;
  const validated = validateArgs(fields, options);
  if (options.dryRun) {
    process.stdout.write(`${JSON.stringify(commandFrame(validated))}\n`);
    return EXIT.ok;
  }
  const { withIdempotencyKey } = await import('../client/idempotency.js');
  const args = withIdempotencyKey(validated);
  const apiKey = requireKey(options.settings);
  const { statusFor } = await import('./status.js');
  const status = await statusFor(options, true);
  if (options.verbose) {
    const via =
      options.via === 'rest'
        ? options.settings.endpoints.map((endpoint) => endpoint.httpBase).join(', ')
        : wsWhere(options.settings);
    status.info(`publishing to ${args.streamId} via ${via}`);
  }
  let outcome: PublishOutcome;
  try {
    if (options.via === 'rest') {
      const { publishOverRest } = await import('./publish-rest.js');
      status.connecting(`${options.settings.endpoint.httpBase}/v1/streams/${args.streamId}/post`);
      outcome = await publishOverRest(options, apiKey, args);
    } else {
      const { publishOverClient } = await import('./publish-one.js');
      outcome = await publishOverClient(options, apiKey, args, status);
    }
  } finally {
    status.stop();
  }
  if (!outcome.ok) {
    const http = outcome.status !== undefined ? `HTTP ${outcome.status} ` : '';
    throw new ExitError(EXIT.failed, `the service refused the post: ${http}${outcome.code}: ${outcome.message}`);
  }
  const duplicate = outcome.duplicate && outcome.attempts <= 1;
  if (options.json) {
    process.stdout.write(`${jsonLine({ post: outcome.post, duplicate })}\n`);
  } else {
    process.stdout.write(`${safeLine(outcome.post.id)}\n`);
    if (duplicate)
      status.warn(
        `duplicate: an earlier post with idempotency key ${args.idempotencyKey} was returned; nothing new was published`,
      );
    if (outcome.post.hidden && outcome.post.releaseAt) status.info(`hidden until ${outcome.post.releaseAt}`);
  }
  return EXIT.ok;
}

async function askForPost(
  options: PostOptions,
  known: { streamId: string | undefined; content: string | undefined; releaseAt: string | undefined },
) {
  const [{ listStreams }, { promptForPost }] = await Promise.all([
    import('../client/streams.js'),
    import('../render/prompts.js'),
  ]);
  const streams =
    options.settings.apiKey !== undefined
      ? await listStreams(options.settings.endpoint, options.settings.apiKey, options.timeoutMs).catch(() => [])
      : [];
  return promptForPost(
    {
      ...(known.streamId !== undefined ? { streamId: known.streamId } : {}),
      ...(known.content !== undefined ? { content: known.content, contentType: options.contentType } : {}),
      ...(known.releaseAt !== undefined ? { releaseAt: known.releaseAt } : {}),
      ...(options.customTarget !== undefined ? { customTarget: options.customTarget } : {}),
    },
    {
      streams,
      describeReleaseAt: (value: string) => new Date(Date.parse(resolveReleaseAt(value, Date.now()))).toLocaleString(),
      // The check the service's schema makes, on the time the relative form stands for.
      validateReleaseAt: (value: string) =>
        parseIsoDateTime(resolveReleaseAt(value, Date.now())) !== undefined ||
        'expected an ISO 8601 date-time with a time zone, or +10m, +2h, +1d',
    },
  );
}
