import * as z from 'zod/mini';
import { ALERT_ACTIONS, ALERT_FIELDS, HIGHLIGHT_COLOURS, type AlertRuleInput } from '../terminal/alerts.js';
import { isCoinSymbol } from '../terminal/coins.js';
import type { Remembered } from '../terminal/model.js';
import { usageError } from './exit.js';

/**
 * `$XDG_CONFIG_HOME/stream-posts/config.json` (default `~/.config/…`):
 * `{"profiles": {"NAME": {"url": "wss://…", "apiKey": "…"}}}`.
 * A profile named `default` applies when no other is chosen.
 */
export interface Profile {
  /** One address, or several instances of one service (tried in turn, like repeated `--url`). */
  url?: string | string[] | undefined;
  apiKey?: string | undefined;
  /** The stream `post` publishes to when `--stream` is not given. */
  stream?: string | undefined;
  /** `terminal`'s alert rules, tried in order after `--alert`. */
  alerts?: AlertRuleInput[] | undefined;
  /** `terminal`'s own: the user's `coins`, and what a session left (checked when `terminal` starts, see terminalSection). */
  terminal?: unknown;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

const ruleSchema = z.object({
  match: z.string(),
  field: z.optional(z.enum(ALERT_FIELDS)),
  streams: z.optional(z.array(z.string())),
  action: z.enum(ALERT_ACTIONS),
  color: z.optional(
    z.enum(HIGHLIGHT_COLOURS, { error: `not a highlight colour (colours: ${HIGHLIGHT_COLOURS.join(', ')})` }),
  ),
  command: z.optional(z.string()),
});

export const configSchema: z.ZodMiniType<ConfigFile> = z.object({
  profiles: z._default(
    z.record(
      z.string(),
      z.object({
        url: z.optional(z.union([z.string(), z.array(z.string())])),
        apiKey: z.optional(z.string()),
        stream: z.optional(z.string()),
        alerts: z.optional(z.array(ruleSchema)),
        terminal: z.optional(z.unknown()),
      }),
    ),
    {},
  ),
});

/** What a session left: written by the terminal, so a part that is not right is dropped, not refused. */
const rememberedSchema: z.ZodMiniType<Partial<Remembered>> = z.object({
  muted: z.optional(z.array(z.string())),
  solo: z.optional(z.nullable(z.string())),
  mutedSources: z.optional(z.array(z.string())),
  pins: z.optional(z.array(z.string())),
  rules: z.optional(z.array(ruleSchema)),
});

/** A profile's `terminal` section, checked. */
export interface TerminalSection {
  /** Symbols added to the package's list of coins. */
  coins: string[];
  /** What the last session left; empty when it could not be read. */
  remembered: Partial<Remembered>;
  /** Why what the last session left was not used: said in the footer, and the session starts clean. */
  warning: string | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `terminal` of a profile: `coins` is the user's and a bad entry is a usage error naming it;
 * the rest is the terminal's own memory, and what of it cannot be read starts the session
 * clean with a warning, never stops it. `where` names the profile and the file.
 */
export function terminalSection(raw: unknown, where: string): TerminalSection {
  const section: TerminalSection = { coins: [], remembered: {}, warning: undefined };
  if (raw === undefined) return section;
  if (!isRecord(raw)) {
    section.warning = `the saved session is not valid: "terminal" is not an object; it starts clean; ${where}`;
    return section;
  }
  const { coins, ...remembered } = raw;
  if (coins !== undefined) {
    if (!Array.isArray(coins)) throw usageError(`${where}: terminal.coins must be a list of coin symbols`);
    coins.forEach((coin: unknown, index) => {
      if (typeof coin !== 'string' || !isCoinSymbol(coin))
        throw usageError(
          `${where}: terminal.coins[${index}] ${JSON.stringify(coin)} is not a coin symbol (1 to 10 letters or digits, such as "PYUSD")`,
        );
    });
    section.coins = coins as string[];
  }
  const parsed = rememberedSchema.safeParse(remembered);
  if (parsed.success) section.remembered = parsed.data;
  else {
    const issue = parsed.error.issues[0];
    // What is wrong first: the footer is one line, and the file's path is long.
    section.warning = `the saved session is not valid at terminal.${issue?.path.join('.') ?? ''} (${issue?.message ?? 'unexpected shape'}); it starts clean; ${where}`;
  }
  return section;
}
