// What every command's declaration gets: the context (command-io.ts), the functions that run
// the commands, and where exit codes go (tests give their own).
import type { Command } from '@commander-js/extra-typings';
import type { CommandIo } from './command-io.js';
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

export type { CommandIo } from './command-io.js';

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
