// Where a command reads and writes: handed to it by the program, so a command need not reach for process.*.

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
