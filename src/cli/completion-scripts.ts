import { allCommands, type CommandSpec, type FlagSpec } from './completion-spec.js';

/** A word in single quotes, for sh and fish alike (fish also reads `\` inside them). */
function quote(word: string, fish = false): string {
  const escaped = fish ? word.replace(/\\/g, '\\\\').replace(/'/g, "\\'") : word.replace(/'/g, `'\\''`);
  return `'${escaped}'`;
}

const key = (spec: CommandSpec): string => spec.path.join(' ');
const flagNames = (flags: readonly FlagSpec[]): string[] => flags.flatMap((flag) => flag.names);
const valueFlags = (spec: CommandSpec): string[] => flagNames(spec.flags.filter((flag) => flag.value !== 'none'));
const commandWords = (spec: CommandSpec): string[] => spec.subcommands.map((sub) => sub.path.at(-1)!);

/** A shell `case` on the command path (or `path|flag`): one branch per entry that has words. */
function caseOn(subject: string, entries: Array<[string, string[]]>, indent = '  '): string {
  const branches = entries
    .filter(([, words]) => words.length > 0)
    .map(([pattern, words]) => `${indent}  ${quote(pattern)}) echo ${quote(words.join(' '))} ;;`);
  return [`${indent}case "${subject}" in`, ...branches, `${indent}esac`].join('\n');
}

/**
 * bash (and zsh through bashcompinit): `complete -F`. The command path is worked out from
 * the words before the cursor, skipping flag values, so `listen --streams a --la` still
 * completes `listen`'s flags.
 */
export function bashScript(root: CommandSpec, name: string): string {
  const fn = `_${name.replace(/\W/g, '_')}`;
  const commands = allCommands(root);
  const flagEntries = (pick: (flag: FlagSpec) => boolean, words: (flag: FlagSpec) => string[]) =>
    commands.flatMap((spec) =>
      spec.flags
        .filter(pick)
        .flatMap((flag) => flag.names.map((flagName): [string, string[]] => [`${key(spec)}|${flagName}`, words(flag)])),
    );
  return `# ${name} completion for bash. Load it: source <(${name} completion bash)
${fn}_commands() {
${caseOn(
  '$1',
  commands.map((spec) => [key(spec), commandWords(spec)]),
)}
}
${fn}_flags() {
${caseOn(
  '$1',
  commands.map((spec) => [key(spec), flagNames(spec.flags)]),
)}
}
# What a flag's value is: streams, file, choices or any; nothing for a flag without one.
${fn}_value_kind() {
${caseOn(
  '$1|$2',
  flagEntries(
    (flag) => flag.value !== 'none',
    (flag) => [flag.value],
  ),
)}
}
${fn}_choices() {
${caseOn(
  '$1|$2',
  flagEntries(
    (flag) => flag.value === 'choices',
    (flag) => flag.choices,
  ),
)}
}
${fn}_arguments() {
${caseOn(
  '$1',
  commands.map((spec) => [key(spec), spec.argumentWords]),
)}
}
# The key's streams, from the service and key of the environment (or the --profile on the line).
${fn}_stream_ids() {
  local args=() i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      --profile|--api-key-file) args+=("\${COMP_WORDS[i]}" "\${COMP_WORDS[i+1]}") ;;
    esac
  done
  "\${COMP_WORDS[0]}" streams --ids --quiet --timeout 2s "\${args[@]}" 2>/dev/null
}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local path='' word kind prefix='' i skip=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then
      skip=0
    elif [[ $word == -* ]]; then
      [[ -n $(${fn}_value_kind "$path" "$word") ]] && skip=1
    elif [[ " $(${fn}_commands "$path") " == *" $word "* ]]; then
      path="\${path:+$path }$word"
    fi
  done
  kind=''
  ((COMP_CWORD > 1)) && [[ $prev == -* ]] && kind=$(${fn}_value_kind "$path" "$prev")
  case "$kind" in
    streams)
      [[ $cur == *,* ]] && prefix="\${cur%,*},"
      COMPREPLY=($(compgen -P "$prefix" -W "$(${fn}_stream_ids)" -- "\${cur##*,}"))
      ;;
    file) COMPREPLY=($(compgen -f -- "$cur")) ;;
    choices) COMPREPLY=($(compgen -W "$(${fn}_choices "$path" "$prev")" -- "$cur")) ;;
    any) COMPREPLY=() ;;
    *)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(${fn}_flags "$path")" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(${fn}_commands "$path") $(${fn}_arguments "$path")" -- "$cur"))
      fi
      ;;
  esac
}
complete -F ${fn} ${name}
`;
}

/** zsh: the bash script through zsh's own bash-completion layer (bashcompinit). */
export function zshScript(root: CommandSpec, name: string): string {
  return `#compdef ${name}
# ${name} completion for zsh. Load it: source <(${name} completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bashScript(root, name).replace(/^# .*\n/, '')}`;
}

/** fish: one `complete` line per command and flag, conditioned on the command path before the cursor. */
export function fishScript(root: CommandSpec, name: string): string {
  const fn = `__${name.replace(/\W/g, '_')}`;
  const commands = allCommands(root);
  const switchOn = (entries: Array<[string, string[]]>) =>
    [
      '    switch "$argv[1]"',
      ...entries
        .filter(([, words]) => words.length > 0)
        .map(
          ([pattern, words]) =>
            `        case ${quote(pattern, true)}\n            printf '%s\\n' ${words.map((word) => quote(word, true)).join(' ')}`,
        ),
      '    end',
    ].join('\n');
  const lines = [
    `# ${name} completion for fish. Load it: ${name} completion fish | source`,
    `function ${fn}_commands`,
    switchOn(commands.map((spec) => [key(spec), commandWords(spec)])),
    'end',
    `function ${fn}_value_flags`,
    switchOn(commands.map((spec) => [key(spec), valueFlags(spec)])),
    'end',
    `function ${fn}_path`,
    '    set -l words (commandline -opc)',
    "    set -l path ''",
    '    set -l skip 0',
    '    for word in $words[2..-1]',
    '        if test $skip = 1',
    '            set skip 0',
    "        else if string match -q -- '-*' $word",
    `            contains -- $word (${fn}_value_flags "$path"); and set skip 1`,
    `        else if contains -- $word (${fn}_commands "$path")`,
    '            set path (string trim -- "$path $word")',
    '        end',
    '    end',
    '    echo $path',
    'end',
    `function ${fn}_at`,
    `    set -l path (${fn}_path)`,
    '    test "$path" = "$argv[1]"',
    'end',
    `function ${fn}_stream_ids`,
    '    set -l args',
    '    set -l words (commandline -opc)',
    '    for i in (seq 2 (math (count $words) - 1))',
    '        if contains -- $words[$i] --profile --api-key-file',
    '            set args $args $words[$i] $words[(math $i + 1)]',
    '        end',
    '    end',
    `    ${name} streams --ids --quiet --timeout 2s $args 2>/dev/null`,
    'end',
    `complete -c ${name} -f`,
  ];
  for (const spec of commands) {
    const at = `-n ${quote(`${fn}_at ${quote(key(spec))}`, true)}`;
    for (const sub of spec.subcommands)
      lines.push(`complete -c ${name} ${at} -a ${quote(sub.path.at(-1)!, true)} -d ${quote(sub.description, true)}`);
    if (spec.argumentWords.length > 0)
      lines.push(`complete -c ${name} ${at} -a ${quote(spec.argumentWords.join(' '), true)}`);
    for (const flag of spec.flags) {
      const names = flag.names
        .map((flagName) => (flagName.startsWith('--') ? `-l ${flagName.slice(2)}` : `-s ${flagName.slice(1)}`))
        .join(' ');
      let value = '';
      if (flag.value === 'streams') value = ` -x -a ${quote(`(${fn}_stream_ids)`, true)}`;
      else if (flag.value === 'file') value = ' -r -F';
      else if (flag.value === 'choices') value = ` -x -a ${quote(flag.choices.join(' '), true)}`;
      else if (flag.value === 'any') value = ' -x';
      lines.push(`complete -c ${name} ${at} ${names}${value} -d ${quote(flag.description, true)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
