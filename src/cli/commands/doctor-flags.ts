// `doctor`'s flags; the command is doctor.ts, loaded only when it runs.
import type { Command } from '@commander-js/extra-typings';
import type { CommandContext } from '../command-context.js';
import { addClientOptions, commonOptions, withKeySource } from '../common.js';
import { usageError } from '../exit.js';

/** Where `doctor` looks when no URL is given anywhere: the hosted service. */
export const HOSTED_URL = 'wss://api.synoptic.com';

/** `doctor`: a conformance run of the protocol against a live service. */
export function addDoctorCommand(program: Command, context: CommandContext): void {
  const { run, setExitCode, env } = context;
  addClientOptions(
    program
      .command('doctor')
      .description(
        `check a live service against the protocol, each exchange compared with serve's (default: ${HOSTED_URL})`,
      )
      .option('--stream <id>', 'the one stream the write checks may post to (with --allow-writes)')
      .option('--allow-writes', 'run the write checks too: a few posts marked as tests, to --stream only')
      .option(
        '--record <file>',
        "save the run's exchanges as a recording (keys replaced), for a bug report or serve --replay",
      ),
  ).action(async (options) => {
    if (options.allowWrites === true && options.stream === undefined)
      throw usageError('--allow-writes needs --stream ID: the one stream the checks may post to');
    const unset = (name: string) => (env[name] ?? '') === '';
    const hosted =
      options.url === undefined &&
      options.profile === undefined &&
      unset('STREAM_POSTS_URL') &&
      unset('STREAM_POSTS_PROFILE');
    const common = await commonOptions({ ...options, url: hosted ? [HOSTED_URL] : options.url }, context);
    setExitCode(
      await withKeySource(common.settings, () =>
        run.doctor(
          {
            ...common,
            writeStream: options.allowWrites === true ? options.stream : undefined,
            record: options.record,
          },
          context,
        ),
      ),
    );
  });
}
