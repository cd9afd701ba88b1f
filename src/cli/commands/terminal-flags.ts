// `terminal`'s flags; the command is terminal.ts, loaded only when it runs.
import { Option, type Command } from '@commander-js/extra-typings';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import { splitStreamIds } from '../../protocol/stream-ids.js';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, positiveInteger, regex, withKeySource } from '../common.js';
import { lastPosts } from '../parse.js';

export function addTerminalCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode } = context;
  addClientOptions(
    program
      .command('terminal')
      .description('follow streams full screen: a news terminal with search, filters, pins and alerts')
      .option(
        '--streams <ids>',
        'comma-separated stream ids (default: every stream you follow or own)',
        (text: string) => splitStreamIds(text),
      )
      .option('--last <n>', `first show up to N recent posts from each stream (0-${MAX_LAST_POSTS})`, lastPosts, 20)
      .option('--match <regex>', 'only posts whose text matches (case-insensitive)', regex)
      .option('--utc', 'show times in UTC (default: local time)')
      .option('--buffer <n>', 'posts kept; the oldest go first', positiveInteger, 5000)
      .option(
        '--max-pins <n>',
        'pinned posts kept, apart from --buffer; past it the oldest pin goes',
        positiveInteger,
        50,
      )
      .option(
        '--alert <regex>',
        "ring the bell for a post whose text matches (case-insensitive; repeatable; before the profile's rules)",
        (text: string, previous: string[] | undefined) => [...(previous ?? []), text],
      )
      .option('--no-reconnect', 'end (exit 3) when the connection drops instead of reconnecting')
      .addOption(
        new Option('--theme <theme>', "colours for a dark or a light background (default: the terminal's own)").choices(
          ['dark', 'light'] as const,
        ),
      ),
  ).action(async (options) => {
    const common = await commonOptions(options, context);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.terminal(
          {
            ...common,
            streams: options.streams,
            last: options.last,
            match: options.match,
            utc: options.utc === true,
            buffer: options.buffer,
            maxPins: options.maxPins,
            reconnect: options.reconnect,
            theme: options.theme,
            alerts: options.alert ?? [],
            profileAlerts: common.settings.alerts,
            memory:
              common.settings.configPath === undefined
                ? undefined
                : {
                    path: common.settings.configPath,
                    // No profile chosen: the session is kept in the one that applies when none is.
                    profile: common.settings.profile ?? 'default',
                    section: common.settings.terminal,
                  },
          },
          context,
        ),
      ),
    );
  });
}
