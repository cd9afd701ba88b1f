import type { Command, CommandUnknownOpts } from '@commander-js/extra-typings';
import type { CommandIo } from '../command-io.js';
import type { CompletionShell } from '../completion-shells.js';
import { bashScript, fishScript, zshScript } from '../completion-scripts.js';
import { commandSpec, type CommandSpec } from '../completion-spec.js';
import { EXIT } from '../exit.js';

export type { CompletionShell } from '../completion-shells.js';

const SCRIPTS: Record<CompletionShell, (spec: CommandSpec, name: string) => string> = {
  bash: bashScript,
  zsh: zshScript,
  fish: fishScript,
};

/** `completion bash|zsh|fish`: prints the script (README: where each shell wants it). */
export async function completion(shell: CompletionShell, program: Command, io: CommandIo): Promise<number> {
  io.streams.stdout.write(SCRIPTS[shell](commandSpec(program as unknown as CommandUnknownOpts), program.name()));
  return EXIT.ok;
}
