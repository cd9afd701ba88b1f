import type { CommandUnknownOpts } from '@commander-js/extra-typings';

/**
 * The program's commands and flags as the completion scripts see them, read from its
 * commander definition (completion.ts prints the scripts, completion-scripts.ts writes them).
 */
/** What a flag's value completes to. */
export type ValueKind = 'none' | 'streams' | 'file' | 'choices' | 'any';

export interface FlagSpec {
  /** `--long` and `-s` spellings. */
  names: string[];
  value: ValueKind;
  choices: string[];
  description: string;
}

export interface CommandSpec {
  /** Words from the program's name on: `[]` for the program, `['config', 'set']`. */
  path: string[];
  description: string;
  flags: FlagSpec[];
  subcommands: CommandSpec[];
  /** Words its first argument takes (`completion bash|zsh|fish`, `help COMMAND`). */
  argumentWords: string[];
}

const STREAM_FLAGS = new Set(['--streams', '--stream']);
const FILE_FLAGS = new Set(['--file', '--api-key-file', '--seed', '--tls-cert', '--tls-key']);

function flagOf(option: {
  long?: string | undefined;
  short?: string | undefined;
  required: boolean;
  optional: boolean;
  argChoices?: string[] | undefined;
  description: string;
}): FlagSpec {
  const names = [option.long, option.short].filter((name): name is string => name !== undefined);
  let value: ValueKind = 'none';
  if (option.required || option.optional) {
    if (option.argChoices !== undefined) value = 'choices';
    else if (names.some((name) => STREAM_FLAGS.has(name))) value = 'streams';
    else if (names.some((name) => FILE_FLAGS.has(name))) value = 'file';
    else value = 'any';
  }
  return { names, value, choices: option.argChoices ?? [], description: option.description };
}

/** The program's commands and flags, read from its commander definition: the scripts never fall behind it. */
export function commandSpec(command: CommandUnknownOpts, path: string[] = []): CommandSpec {
  const help = command.createHelp();
  const subcommands = help.visibleCommands(command).map((sub) => commandSpec(sub, [...path, sub.name()]));
  const argument = command.registeredArguments[0];
  const argumentWords =
    command.name() === 'help' && command.parent
      ? help.visibleCommands(command.parent).map((sub) => sub.name())
      : (argument?.argChoices ?? []);
  return {
    path,
    description: command.description(),
    flags: help.visibleOptions(command).map(flagOf),
    subcommands,
    argumentWords,
  };
}

/** Every command of the tree, the program first. */
export function allCommands(spec: CommandSpec): CommandSpec[] {
  return [spec, ...spec.subcommands.flatMap(allCommands)];
}
