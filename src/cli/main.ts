import { CommanderError } from '@commander-js/extra-typings';
import { ClientError } from '../client/errors.js';
import { safeLine, safeLines } from '../render/text.js';
import { exitCodeFor } from './common.js';
import { EXIT, ExitError } from './exit.js';
import { buildProgram } from './program.js';

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed its message; help and version are successes.
      process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    // Messages carry what a server sent (error texts, close reasons, HTTP status text).
    if (error instanceof ClientError) {
      process.stderr.write(`stream-posts: ${safeLine(error.message)}\n`);
      process.exitCode = exitCodeFor(error);
      return;
    }
    if (error instanceof ExitError) {
      process.stderr.write(`stream-posts: ${safeLine(error.message)}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    process.stderr.write(
      `stream-posts: unexpected internal error (please report it):\n${safeLines((error as Error).stack ?? String(error))}\n`,
    );
    process.exitCode = EXIT.failed;
  }
}

await main(process.argv);
