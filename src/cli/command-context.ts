// What every command's declaration gets: the functions that run the commands, the
// environment, and where exit codes go (tests give their own).
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

/** The command functions the program hands typed options to; tests give their own to check the parsing. */
export interface CommandRunners {
  serve(options: ServeOptions): Promise<number>;
  listen(options: ListenOptions): Promise<number>;
  terminal(options: TerminalOptions): Promise<number>;
  post(options: PostOptions): Promise<number>;
  demo(options: DemoOptions): Promise<number>;
  configSet(name: string, options: ConfigSetOptions): Promise<number>;
  configList(json: boolean): Promise<number>;
  configRemove(name: string, json: boolean): Promise<number>;
  configShowPath(json: boolean): Promise<number>;
  streams(options: StreamsOptions): Promise<number>;
  history(options: HistoryOptions): Promise<number>;
  targets(options: TargetsOptions): Promise<number>;
  targetsSet(options: TargetsSetOptions): Promise<number>;
  completion(shell: CompletionShell, program: Command): Promise<number>;
  doctor(options: DoctorOptions): Promise<number>;
  scenarioFromRecording(file: string, options: { output?: string | undefined; json: boolean }): Promise<number>;
}

export interface ProgramContext {
  run?: CommandRunners;
  /** Where STREAM_POSTS_* and NO_COLOR are read from. */
  env?: NodeJS.ProcessEnv;
  /** Where a command's exit code goes. */
  setExitCode?: (code: number) => void;
  /** Where a command writes its data (stdout) and its diagnostics (stderr). */
  streams?: CommandStreams;
  /** Where commander writes help and parse errors (default: stdout and stderr). */
  output?: { writeOut(text: string): void; writeErr(text: string): void };
}

/** ProgramContext with every default filled in, as each command's declaration takes it. */
export type CommandContext = Required<Omit<ProgramContext, 'output'>>;
