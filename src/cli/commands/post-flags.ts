// `post`'s flags (and `post --batch`'s); the commands are post.ts and post-batch.ts, loaded
// only when they run.
import { Option, type Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, positiveInteger, withKeySource } from '../common.js';
import { EXIT, ExitError, prefixed } from '../exit.js';

/** Starts loading modules a command will await later; a failure shows where they are awaited. */
function preload(...modules: Promise<unknown>[]): void {
  for (const module of modules) module.catch(() => undefined);
}

/**
 * Commander's "unknown option" for content such as "-5% at the open" says how to pass it;
 * not when commander recognised a misspelt flag (`--markdwon`: did you mean `--markdown`?).
 */
function hintDashContent(text: string, write: (text: string) => void): void {
  const hint =
    /unknown option '-/.test(text) && !/Did you mean/.test(text)
      ? "hint: use -- before content starting with -: stream-posts post -- '-5% at the open'\n"
      : '';
  write(`${prefixed(text)}${hint}`);
}

export function addPostCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode } = context;
  const command = program
    .command('post')
    .description('publish a post (add-stream-post); --batch publishes NDJSON lines from standard input')
    .argument('[content]', 'the post text; - or a pipe: standard input (content starting with -: put -- before it)')
    .allowExcessArguments()
    .option(
      '-s, --stream <id>',
      "stream to publish to (default: the profile's stream, else the stream of a stream key; prompted for on a terminal)",
    )
    .option('--markdown', 'the content is markdown (same as --content-type markdown)')
    .addOption(new Option('--content-type <type>', 'rawtext or markdown').choices(['rawtext', 'markdown'] as const))
    .option(
      '--release-at <when>',
      "hide the content until then: ISO 8601 with a zone, or +10m, +2h, +1d on the service's clock",
    )
    .option('--allow-past', 'a --release-at in the past publishes at once instead of being refused')
    .option('--custom-target <target>', 'custom target (custom streams only)')
    .option(
      '--idempotency-key <key>',
      'deduplication key (default: a new one per post, so retries never publish twice)',
    )
    .option('-f, --file <file>', 'read the content from a file, or - for standard input')
    .addOption(
      new Option('--via <transport>', 'publish over the WebSocket or the REST form')
        .choices(['ws', 'rest'] as const)
        .default('ws' as const),
    )
    .option('--dry-run', 'validate and print the command; send nothing')
    .option('--batch', 'publish NDJSON lines from standard input, one add-stream-post data object per line')
    .option('--window <n>', 'with --batch: most posts in flight, unacknowledged', positiveInteger, 64);
  command.configureOutput({
    outputError: (text, write) => hintDashContent(text, write),
  });
  addClientOptions(command).action(async (content, options, self) => {
    // The modules this command loads, read side by side instead of one after another.
    preload(
      import('../post-content.js'),
      import('../settings.js'),
      options.batch === true ? import('./post-batch.js') : import('./post.js'),
    );
    if (options.markdown === true && options.contentType === 'rawtext') {
      throw new ExitError(EXIT.usage, '--markdown and --content-type rawtext contradict each other');
    }
    (await import('../post-content.js')).checkExtraArguments(self.args.slice(1));
    if (options.apiKeyStdin === true && options.batch === true && (options.file ?? '-') === '-') {
      throw new ExitError(
        EXIT.usage,
        '--batch reads its posts from standard input, which --api-key-stdin uses for the key: give them with --file FILE',
      );
    }
    const common = await commonOptions(options, context);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.post(
          {
            ...common,
            content,
            stream: options.stream,
            contentType: options.markdown === true ? 'markdown' : (options.contentType ?? 'rawtext'),
            contentTypeGiven: options.markdown === true || options.contentType !== undefined,
            releaseAt: options.releaseAt,
            allowPast: options.allowPast === true,
            customTarget: options.customTarget,
            idempotencyKey: options.idempotencyKey,
            file: options.file,
            via: options.via,
            dryRun: options.dryRun === true,
            batch: options.batch === true,
            window: options.window,
          },
          context,
        ),
      ),
    );
  });
}
