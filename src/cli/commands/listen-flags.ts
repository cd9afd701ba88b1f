// `listen` and `tree`'s flags; the command is listen.ts, loaded only when it runs.
import { Option, type Command } from '@commander-js/extra-typings';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import { splitStreamIds } from '../../protocol/stream-ids.js';
import type { SubscribeCommandName } from '../../protocol/types.js';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, positiveInteger, regex, withKeySource } from '../common.js';
import { lastPosts, parseTimeout } from '../parse.js';

export function addSubscribeCommand(
  program: Command,
  name: 'listen' | 'tree',
  command: SubscribeCommandName,
  description: string,
  context: CommandContext,
): void {
  addClientOptions(
    program
      .command(name)
      .description(description)
      .option(
        '--streams <ids>',
        'comma-separated stream ids (default: every stream you follow or own)',
        (text: string) => splitStreamIds(text),
      )
      .option('--last <n>', `first show up to N recent posts from each stream (0-${MAX_LAST_POSTS})`, lastPosts, 0)
      .option(
        '--count <n>',
        'exit 0 after N live posts (a release counts as one; posts shown by --last do not count)',
        positiveInteger,
      )
      .addOption(
        new Option(
          '--idle-timeout <duration>',
          'exit 0 when no post arrived for this long (30s, 5m; a bare number is seconds)',
        ).argParser(parseTimeout),
      )
      .option('--match <regex>', 'only posts whose text matches (case-insensitive), matches highlighted', regex)
      .option('--bell', 'ring the terminal bell for each post')
      .option('--utc', 'show times in UTC, marked UTC (default: local time)')
      .option('--no-reconnect', 'end (exit 3) when the connection drops instead of reconnecting')
      .option(
        '--exec <command>',
        'run a shell command for each post, one at a time, with the post as JSON on stdin and STREAM_POSTS_* variables',
      ),
  ).action(async (options) => {
    const common = await commonOptions(options, context);
    context.setExitCode(
      await withKeySource(common.settings, () =>
        context.run.listen(
          {
            ...common,
            command,
            streams: options.streams,
            last: options.last,
            count: options.count,
            idleTimeoutMs: options.idleTimeout,
            match: options.match,
            bell: options.bell === true,
            reconnect: options.reconnect,
            exec: options.exec,
            utc: options.utc === true,
          },
          context,
        ),
      ),
    );
  });
}
