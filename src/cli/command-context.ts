// The one context a command runs in, built once by the program from what the entry hands it
// (src/cli/main.ts, the one place that reads process.*): the streams with their TTY facts, the
// environment, an abort signal for SIGINT and SIGTERM, and the clock. A command is a function
// of its flags and this context, so a test runs it in-process with streams of its own.
import type { Command } from '@commander-js/extra-typings';
import type { CommandStreams } from './command-streams.js';
import type { ConfigSetOptions } from './commands/config.js';
import type { DemoOptions } from './commands/demo.js';
import type { DoctorOptions } from './commands/doctor.js';
import type { HistoryOptions } from './commands/history.js';
import type { ListenOptions } from './commands/listen.js';
import type { PostOptions } from './post-options.js';
import type { ServeOptions } from './commands/serve.js';
import type { StreamsOptions } from './commands/streams.js';
import type { TargetsOptions, TargetsSetOptions } from './commands/targets.js';
import type { TerminalOptions } from './commands/terminal.js';
import type { CompletionShell } from './completion-shells.js';

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

/** The command functions the program hands typed options and the context to; tests give their own to check the parsing. */
export interface CommandRunners {
  serve(options: ServeOptions, io: CommandIo): Promise<number>;
  listen(options: ListenOptions, io: CommandIo): Promise<number>;
  terminal(options: TerminalOptions, io: CommandIo): Promise<number>;
  post(options: PostOptions, io: CommandIo): Promise<number>;
  demo(options: DemoOptions, io: CommandIo): Promise<number>;
  configSet(name: string, options: ConfigSetOptions, io: CommandIo): Promise<number>;
  configList(json: boolean, io: CommandIo): Promise<number>;
  configRemove(name: string, json: boolean, io: CommandIo): Promise<number>;
  configShowPath(json: boolean, io: CommandIo): Promise<number>;
  streams(options: StreamsOptions, io: CommandIo): Promise<number>;
  history(options: HistoryOptions, io: CommandIo): Promise<number>;
  targets(options: TargetsOptions, io: CommandIo): Promise<number>;
  targetsSet(options: TargetsSetOptions, io: CommandIo): Promise<number>;
  completion(shell: CompletionShell, program: Command, io: CommandIo): Promise<number>;
  doctor(options: DoctorOptions, io: CommandIo): Promise<number>;
  scenarioFromRecording(
    file: string,
    options: { output?: string | undefined; json: boolean },
    io: CommandIo,
  ): Promise<number>;
}

export interface ProgramContext extends CommandIo {
  /** Default: each command's own module, loaded when it runs. */
  run?: CommandRunners;
  /** Where a command's exit code goes. */
  setExitCode: (code: number) => void;
  /** Where commander writes help and parse errors (default: the context's stdout and stderr). */
  output?: { writeOut(text: string): void; writeErr(text: string): void };
}

/** ProgramContext with every default filled in, as each command's declaration takes it. */
export type CommandContext = Required<Omit<ProgramContext, 'output'>>;
