// The one context a command runs in, built once from what the entry hands the program
// (src/cli/main.ts, the one place that reads process.*): the streams with their TTY facts, the
// environment, an abort signal for SIGINT and SIGTERM, and the clock. A command is a function
// of its flags and this context, so a test runs it in-process with streams of its own.

/** An output stream, with its TTY facts (`isTTY`, `columns`, `fd`) where it has them. */
export type CommandOutput = NodeJS.WritableStream & { isTTY?: boolean; columns?: number; fd?: number };

/** An input stream, with its TTY facts where it has them (`setRawMode` on a terminal). */
export type CommandInput = NodeJS.ReadableStream & { isTTY?: boolean; fd?: number };

/** A command's standard input, output and error, as gh's IOStreams. */
export interface CommandStreams {
  stdin: CommandInput;
  stdout: CommandOutput;
  stderr: CommandOutput;
}

/** The time now, in milliseconds since the epoch (Date.now). */
export interface Clock {
  now(): number;
}

/** What a command reads, writes and stops on, instead of process.* (gh's IOStreams and Options). */
export interface CommandIo {
  /** Standard input, output and error, with their TTY facts. */
  streams: CommandStreams;
  /** Where STREAM_POSTS_*, NO_COLOR, TERM and the rest are read from. */
  env: NodeJS.ProcessEnv;
  /**
   * Aborted on SIGINT or SIGTERM, its reason the signal's name. A command that ends cleanly on
   * them listens to it; while nothing listens, the signal does what it does by default.
   */
  signal: AbortSignal;
  clock: Clock;
  /** The words that run this CLI as the user ran it (`npx stream-posts`, `stream-posts`, `node bin/…`), for hints. */
  invokedAs: string;
}
