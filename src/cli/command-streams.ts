// Where a command writes: handed to it by the program, so a command need not reach for process.*.
/** A command's output, with its TTY facts (`columns`, `isTTY`) where the stream has them. */
export interface CommandStreams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}
