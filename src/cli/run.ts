// A command line run to its end in a context: what the entry (main.ts) does for the process,
// and what a test does in-process with streams of its own.
import { CommanderError } from '@commander-js/extra-typings';
import { StreamPostsError } from '../index.js';
import { safeLine, safeLines } from '../render/text.js';
import type { ProgramContext } from './command-context.js';
import { exitCodeFor } from './common.js';
import { EXIT, ExitError } from './exit.js';
import { buildProgram } from './program.js';

/** Parses `argv` (`node script ...args`) and runs its command; errors become a line on stderr and an exit code. */
export async function runProgram(argv: readonly string[], context: ProgramContext): Promise<void> {
  const { stderr } = context.streams;
  try {
    await buildProgram(context).parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed its message; help and version are successes.
      context.setExitCode(error.exitCode === 0 ? EXIT.ok : EXIT.usage);
      return;
    }
    // Messages carry what a server sent (error texts, close reasons, HTTP status text).
    if (error instanceof StreamPostsError) {
      stderr.write(`stream-posts: ${safeLine(error.message)}\n`);
      context.setExitCode(exitCodeFor(error));
      return;
    }
    if (error instanceof ExitError) {
      stderr.write(`stream-posts: ${safeLine(error.message)}\n`);
      context.setExitCode(error.exitCode);
      return;
    }
    stderr.write(
      `stream-posts: unexpected internal error (please report it):\n${safeLines((error as Error).stack ?? String(error))}\n`,
    );
    context.setExitCode(EXIT.failed);
  }
}
