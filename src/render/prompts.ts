import type { ContentType } from '../protocol/types.js';
import { safeLine } from './text.js';

export interface PostAnswers {
  streamId: string;
  content: string;
  contentType: ContentType;
  /** As typed (the CLI's validator decides what it accepts); null publishes at once. */
  releaseAt: string | null;
  /** Asked for only on a custom stream; null elsewhere. */
  customTarget: string | null;
}

export interface PromptOptions {
  /** Offered as a list; when empty, the stream id is typed. */
  streams: { id: string; name: string; customTargets?: string[] }[];
  input?: NodeJS.ReadableStream;
  /**
   * Defaults to stderr: stdout carries only the command's result. inquirer ends
   * any other stream after the first prompt (it pipes into it).
   */
  output?: NodeJS.WritableStream;
  /** `true`, or the message to show for a release time the CLI would refuse. */
  validateReleaseAt: (value: string) => string | true;
  /** How an accepted release time is shown in the confirmation (e.g. "+1h" as a date). */
  describeReleaseAt?: (value: string) => string;
}

/**
 * Asks for what `known` lacks: stream, content, its type (only for typed
 * content), release time (pass `releaseAt: null` to skip it), then a
 * confirmation. Undefined when the user declines. Ctrl-C rejects with
 * inquirer's ExitPromptError (see `isPromptCancelled`).
 */
export async function promptForPost(
  known: Partial<PostAnswers>,
  options: PromptOptions,
): Promise<PostAnswers | undefined> {
  const { confirm, input, select } = await import('@inquirer/prompts');
  const context = { input: options.input, output: options.output ?? process.stderr };
  const { streams } = options;

  const streamId =
    known.streamId ??
    (streams.length > 0
      ? await select(
          {
            message: 'Stream',
            // Names, ids and targets come from the service: shown sanitized, sent as they are.
            choices: streams.map((stream) => ({ value: stream.id, name: streamLabel(stream) })),
          },
          context,
        )
      : (await input({ message: 'Stream id', required: true }, context)).trim());

  let content = known.content;
  let contentType = known.contentType ?? 'rawtext';
  if (content === undefined) {
    content = await input({ message: 'Content (one line; use --file for more)', required: true }, context);
    contentType =
      known.contentType ??
      (await select<ContentType>(
        {
          message: 'Content type',
          choices: [
            { value: 'rawtext', name: 'plain text' },
            { value: 'markdown', name: 'markdown' },
          ],
          default: 'rawtext',
        },
        context,
      ));
  }

  let releaseAt = known.releaseAt;
  if (releaseAt === undefined) {
    const typed = await input(
      {
        message: 'Release at (empty: publish now)',
        validate: (value) => value.trim() === '' || options.validateReleaseAt(value.trim()),
      },
      context,
    );
    releaseAt = typed.trim() === '' ? null : typed.trim();
  }

  const stream = streams.find((candidate) => candidate.id === streamId);
  let customTarget = known.customTarget ?? null;
  const targets = stream?.customTargets ?? [];
  if (customTarget === null && targets.length > 0) {
    customTarget = await select(
      {
        message: 'Custom target (who receives it)',
        choices: targets.map((target) => ({ value: target, name: safeLine(target) })),
      },
      context,
    );
  }

  const name = safeLine(stream?.name ?? streamId) || safeLine(streamId);
  const when = releaseAt === null ? '' : `, hidden until ${options.describeReleaseAt?.(releaseAt) ?? releaseAt}`;
  const publish = await confirm(
    {
      message: `Publish to ${name}${customTarget === null ? '' : ` → ${safeLine(customTarget)}`}${when}?`,
      default: true,
    },
    context,
  );
  return publish ? { streamId, content, contentType, releaseAt, customTarget } : undefined;
}

function streamLabel(stream: { id: string; name: string }): string {
  const id = safeLine(stream.id);
  const name = safeLine(stream.name);
  return name === '' || name === id ? id : `${name} (${id})`;
}

/** Ctrl-C during a prompt. Matched by name so the check does not load inquirer. */
export function isPromptCancelled(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExitPromptError';
}
