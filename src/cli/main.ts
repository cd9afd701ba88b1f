// The entry: the one place that reads process.* for the commands. It hands the program the
// process's streams, environment, exit code and signals as one context (command-context.ts).
import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import type { CommandStreams } from './command-io.js';
import { invokedAs } from './invocation.js';
import { runProgram } from './run.js';

// fetch parses HTTP with WebAssembly, which V8 then recompiles in the background; Node waits
// for that before it exits, so `post --via rest` sat 70-200 ms idle after its answer. The
// baseline compiler alone parses the few replies a command reads just as well. Set before
// the first fetch compiles the parser.
setFlagsFromString('--liftoff-only');

// `stream-posts --help | head -1`: a reader that leaves early ends the output, not the
// process in a stack trace. Commands that stream (listen, serve) end on it themselves.
function quietOnEpipe<T extends NodeJS.WriteStream>(output: T): T {
  output.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  return output;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const stopping = new AbortController();

/**
 * SIGINT and SIGTERM abort the context's signal for a command that listens to it (listen,
 * serve, the terminal end cleanly, exit 0). Where nothing listens, or on a second signal, the
 * signal is raised again without this handler, to do what it does by default (exit 130, 143).
 */
function onStopSignal(signal: NodeJS.Signals): void {
  if (!stopping.signal.aborted && getEventListeners(stopping.signal, 'abort').length > 0) {
    stopping.abort(signal);
    return;
  }
  for (const name of STOP_SIGNALS) process.off(name, onStopSignal);
  process.kill(process.pid, signal);
}
for (const name of STOP_SIGNALS) process.on(name, onStopSignal);

let stderr: NodeJS.WriteStream | undefined;
const streams: CommandStreams = {
  // Asked for only when a command reads it: building process.stdin costs start-up time.
  get stdin() {
    return process.stdin;
  },
  stdout: quietOnEpipe(process.stdout),
  // Built when first written to: a command that prints no diagnostic never pays for it.
  get stderr() {
    return (stderr ??= quietOnEpipe(process.stderr));
  },
};

await runProgram(process.argv, {
  streams,
  env: process.env,
  signal: stopping.signal,
  clock: { now: () => Date.now() },
  invokedAs: invokedAs(process.argv[1], process.env, process.cwd()),
  setExitCode: (code) => {
    process.exitCode = code;
  },
});
