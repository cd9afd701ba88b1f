import { platform as osPlatform } from 'node:os';
import type { AlertRule, AlertRuleInput } from '../../terminal/alerts.js';
import type { ThemeName } from '../../terminal/theme.js';
import { commandFailure } from '../../api/internal.js';
import type { CommandIo } from '../command-io.js';
import { requireKey, type CommonOptions } from '../common.js';
import { wsWhere } from '../describe.js';
import { EXIT, ExitError } from '../exit.js';
import { writeConfig, type ConfigFile } from '../settings.js';

export interface TerminalOptions extends CommonOptions {
  streams: string[] | undefined;
  last: number;
  match: RegExp | undefined;
  utc: boolean;
  buffer: number;
  /** Pinned posts held apart from the buffer (the model's default when not given). */
  maxPins?: number | undefined;
  reconnect: boolean;
  /** `--alert REGEX`, in order; they act before the profile's rules. */
  alerts: string[];
  /** The profile's `alerts` (see settings.ts). */
  profileAlerts?: AlertRuleInput[] | undefined;
  /** Where the session is kept and what the last one left: the profile's `terminal` section (none: nothing is kept). */
  memory?: { path: string; profile: string; section: unknown } | undefined;
  /** `--theme`: the colours for this background, instead of asking the terminal. */
  theme?: ThemeName | undefined;
  /** Ends the view as `q` does (the demo stops it this way). */
  signal?: AbortSignal;
  /** Called once the subscription is first acknowledged (the demo starts publishing then). */
  onSubscribed?: () => void;
}

export const NOT_A_TERMINAL = 'terminal needs an interactive terminal; use tree or listen';
export const NO_CURSOR_ADDRESSING = 'terminal needs a terminal with cursor addressing; use tree or listen';

/**
 * Whether the terminal named by TERM can place the cursor: `dumb` (an editor's shell, a CI
 * log) and `unknown` cannot, and an unset TERM names no terminal at all. Windows sets none.
 */
export function cursorAddressing(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = osPlatform()): boolean {
  if (platform === 'win32') return true;
  const term = env['TERM'] ?? '';
  return term !== '' && term !== 'dumb' && !term.startsWith('dumb-') && term !== 'unknown';
}

/** The rules in the order they are tried: `--alert` first (each rings the bell), then the profile's. */
export async function alertRules(
  options: Pick<TerminalOptions, 'alerts' | 'profileAlerts'>,
  saved: readonly AlertRule[] = [],
): Promise<AlertRule[]> {
  const { compileRules, AlertRuleError } = await import('../../terminal/alerts.js');
  try {
    return compileRules([
      ...options.alerts.map((match, index) => ({
        name: `--alert ${index + 1}`,
        rule: { match, action: 'bell' as const },
      })),
      ...(options.profileAlerts ?? []).map((rule, index) => ({ name: `profile rule ${index + 1}`, rule })),
    ]).concat(saved);
  } catch (error) {
    if (error instanceof AlertRuleError) throw new ExitError(EXIT.usage, error.message);
    throw error;
  }
}

/** `terminal`: the full-screen news terminal, until `q`, Ctrl-C, a signal or a lost connection. */
export async function terminal(options: TerminalOptions, io: CommandIo): Promise<number> {
  const { env } = io;
  if (io.streams.stdin.isTTY !== true || io.streams.stdout.isTTY !== true)
    throw new ExitError(EXIT.usage, NOT_A_TERMINAL);
  // Both are terminals: the screen needs their raw mode and size.
  const stdin = io.streams.stdin as NodeJS.ReadStream;
  const stdout = io.streams.stdout as NodeJS.WriteStream;
  if (!cursorAddressing(env)) throw new ExitError(EXIT.usage, NO_CURSOR_ADDRESSING);
  const apiKey = requireKey(options.settings);
  const { remembering } = await import('../../terminal/remembering.js');
  const { terminalSection } = await import('../settings-schema.js');
  const memory = options.memory;
  const kept = remembering(
    memory && terminalSection(memory.section, `profile "${memory.profile}" in ${memory.path}`),
    memory && { ...memory, write: (config) => writeConfig(memory.path, config as ConfigFile) },
  );
  const rules = await alertRules(options, kept.rules);
  const [{ runTerminal }, { ExecHook }] = await Promise.all([
    import('../../terminal/run.js'),
    import('../exec-hook.js'),
  ]);
  const failure = await runTerminal({
    ...options,
    endpoints: options.settings.endpoints,
    apiKey,
    stdin,
    stdout,
    env,
    signals: [io.signal, options.signal],
    rules,
    kept,
    service: wsWhere(options.settings),
    // The screen is the terminal's: what the command prints would draw over it.
    command: (command, report) => new ExecHook(command, { apiKey, env, report, output: 'ignore' }),
  });
  if (failure !== undefined)
    throw commandFailure(failure, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  return EXIT.ok;
}
