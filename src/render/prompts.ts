import { basename } from 'node:path';
import { STREAM_ID_PATTERN } from '../protocol/limits.js';
import type { ContentType } from '../protocol/types.js';
import { safeLine } from './text.js';

export interface PostAnswers {
  streamId: string;
  content: string;
  contentType: ContentType;
  /** The absolute ISO time to send (relative input already resolved); null publishes at once. */
  releaseAt: string | null;
  /** Asked for only on a custom stream; null elsewhere. */
  customTarget: string | null;
}

export interface PromptOptions {
  /** The key's user's streams, for names and custom targets: never offered as a list (see promptForPost). */
  streams: { id: string; name: string; customTargets?: string[] }[];
  input?: NodeJS.ReadableStream;
  /**
   * Defaults to stderr: stdout carries only the command's result. inquirer ends
   * any other stream after the first prompt (it pipes into it).
   */
  output?: NodeJS.WritableStream;
  /** `true`, or the message to show for a release time the CLI would refuse. */
  checkReleaseAt: (value: string) => string | true;
  /** The absolute time an accepted release time stands for (`+1h` → ISO), fixed when answered. */
  resolveReleaseAt: (value: string) => string;
  /** How a release time is shown in the confirmation, with its zone. */
  describeReleaseAt: (iso: string) => string;
  /** `$VISUAL`/`$EDITOR`: an empty first line opens it for content of several lines. */
  editor?: string | undefined;
}

type Context = { input: NodeJS.ReadableStream | undefined; output: NodeJS.WritableStream };

async function askContent(options: PromptOptions, context: Context): Promise<string> {
  const { editor, input } = await import('@inquirer/prompts');
  const notBlank = (value: string) => value.trim() !== '' || 'the content is empty';
  if (options.editor === undefined) {
    return input({ message: 'Content (one line; use --file for more)', required: true, validate: notBlank }, context);
  }
  // The editor's name, not its path and arguments: the question stays on one line.
  const name = basename(options.editor.trim().split(/\s+/)[0] ?? options.editor);
  const line = await input({ message: `Content (one line, or Enter to write it in ${safeLine(name)})` }, context);
  if (line.trim() !== '') return line;
  return editor({ message: 'Content', waitForUserInput: false, validate: notBlank }, context);
}

/**
 * Asks for what `known` lacks: the stream id (only when neither a flag nor the key says
 * which stream it publishes to: typed, never picked from a list, since the service does
 * not say which streams a key may publish to), the content (an editor for several lines),
 * its type, the release time, the custom target on a custom stream, then a confirmation.
 * Undefined when the user declines. Ctrl-C rejects with inquirer's ExitPromptError (see
 * `isPromptCancelled`).
 */
export async function promptForPost(
  known: Partial<PostAnswers>,
  options: PromptOptions,
): Promise<PostAnswers | undefined> {
  const { confirm, input, select } = await import('@inquirer/prompts');
  const context: Context = { input: options.input, output: options.output ?? process.stderr };
  const { streams } = options;

  const streamId =
    known.streamId ??
    (
      await input(
        {
          message: 'Stream id (the service does not say which stream this key publishes to)',
          validate: (value) =>
            STREAM_ID_PATTERN.test(value.trim()) || 'a stream id is 1-64 letters, digits, "_" or "-"',
        },
        context,
      )
    ).trim();

  const content = known.content ?? (await askContent(options, context));
  const contentType =
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

  let releaseAt = known.releaseAt;
  if (releaseAt === undefined) {
    const typed = await input(
      {
        message: 'Release at (empty: publish now; +10m, +2h, or a date-time with a zone)',
        validate: (value) => value.trim() === '' || options.checkReleaseAt(value.trim()),
      },
      context,
    );
    releaseAt = typed.trim() === '' ? null : options.resolveReleaseAt(typed.trim());
  }

  // Names and targets come from the service: shown sanitized, sent as they are.
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

  const label = streamLabel(stream ?? { id: streamId, name: '' });
  const when = releaseAt === null ? '' : `, hidden until ${options.describeReleaseAt(releaseAt)}`;
  const publish = await confirm(
    {
      message: `Publish to ${label}${customTarget === null ? '' : ` → ${safeLine(customTarget)}`}${when}?`,
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

/** `--api-key-stdin` on a terminal: the key typed without echo. */
export async function promptForKey(context: {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}): Promise<string> {
  const { password } = await import('@inquirer/prompts');
  return password({ message: 'API key (not shown)', mask: false }, context);
}

/** Ctrl-C during a prompt. Matched by name so the check does not load inquirer. */
export function isPromptCancelled(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExitPromptError';
}
