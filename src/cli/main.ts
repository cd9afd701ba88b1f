import { CommanderError } from '@commander-js/extra-typings';
import { setFlagsFromString } from 'node:v8';
import { StreamPostsError } from '../index.js';
import { safeLine, safeLines } from '../render/text.js';
import { exitCodeFor } from './common.js';
import { EXIT, ExitError } from './exit.js';
import { buildProgram } from './program.js';

// fetch parses HTTP with WebAssembly, which V8 then recompiles in the background; Node waits
// for that before it exits, so `post --via rest` sat 70-200 ms idle after its answer. The
// baseline compiler alone parses the few replies a command reads just as well. Set before
// the first fetch compiles the parser.
setFlagsFromString('--liftoff-only');

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
    if (error instanceof StreamPostsError) {
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
