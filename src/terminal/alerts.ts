import type { Entry } from './entry.js';

export const ALERT_ACTIONS = ['bell', 'notify', 'highlight', 'pin', 'mute', 'exec'] as const;
export type AlertAction = (typeof ALERT_ACTIONS)[number];
/** What a rule's pattern is tried against: what the reader reads (the default), or the stream's name. */
export const ALERT_FIELDS = ['text', 'stream'] as const;
export type AlertField = (typeof ALERT_FIELDS)[number];
/** The colours a `highlight` rule may name: what it matched is drawn on that colour. */
export const HIGHLIGHT_COLOURS = ['red', 'green', 'yellow', 'blue', 'magenta', 'cyan'] as const;
export type HighlightColour = (typeof HIGHLIGHT_COLOURS)[number];

/** A rule as written: `--alert REGEX`, or `{ match, field?, streams?, action, color?, command? }` in a profile. */
export interface AlertRuleInput {
  match: string;
  field?: AlertField | undefined;
  streams?: string[] | undefined;
  action: AlertAction;
  /** `highlight` only: colour what matched, not the whole row. */
  color?: HighlightColour | undefined;
  command?: string | undefined;
}

export interface AlertRule {
  /** How the rule is named in messages and in the `a` list: `--alert 1`, `profile rule 2`. */
  readonly name: string;
  readonly source: string;
  readonly pattern: RegExp;
  readonly field: AlertField;
  readonly streams: ReadonlySet<string> | undefined;
  readonly action: AlertAction;
  readonly command: string | undefined;
  readonly color: HighlightColour | undefined;
  /** Added in the terminal (the `a` screen): it may be removed there, and the session keeps it. */
  readonly app: boolean;
  /** The rule as written. */
  readonly input: AlertRuleInput;
}

/** A rule that cannot be used, named so the user finds it. */
export class AlertRuleError extends Error {
  readonly code = 'invalid-alert-rule';
}

/**
 * A search or a rule's pattern as a case-insensitive regular expression. `$` before a letter
 * could never match there (it is the end of the text), so it is the cashtag's `$`: `$BTC`
 * finds `$BTC`. Throws SyntaxError when the text is not a regular expression.
 */
export function compilePattern(text: string): RegExp {
  return new RegExp(
    text.replace(/\\.|\$(?=\p{L})/gsu, (part) => (part === '$' ? '\\$' : part)),
    'iu',
  );
}

/** Why a pattern is not a regular expression, without the pattern the engine repeats. */
export function patternError(error: unknown): string {
  return String((error as Error).message).replace(/^Invalid regular expression: \/.*\/[a-z]*: /su, '');
}

/** Compiles rules once, at start: a bad pattern or a missing command ends the command before it connects. */
export function compileRules(inputs: readonly { name: string; rule: AlertRuleInput; app?: boolean }[]): AlertRule[] {
  return inputs.map(({ name, rule, app }) => {
    let pattern: RegExp;
    try {
      pattern = compilePattern(rule.match);
    } catch (error) {
      throw new AlertRuleError(`alert rule ${name}: not a valid regular expression: ${patternError(error)}`);
    }
    if (rule.action === 'exec' && (rule.command === undefined || rule.command.trim() === ''))
      throw new AlertRuleError(`alert rule ${name}: the exec action needs a command`);
    if (rule.color !== undefined) {
      if (!(HIGHLIGHT_COLOURS as readonly string[]).includes(rule.color))
        throw new AlertRuleError(
          `alert rule ${name}: no colour named "${String(rule.color)}" (colours: ${HIGHLIGHT_COLOURS.join(', ')})`,
        );
      if (rule.action !== 'highlight')
        throw new AlertRuleError(`alert rule ${name}: a colour is for the highlight action, not ${rule.action}`);
    }
    return {
      name,
      source: rule.match,
      pattern,
      field: rule.field ?? 'text',
      streams: rule.streams === undefined ? undefined : new Set(rule.streams),
      action: rule.action,
      command: rule.command,
      color: rule.color,
      app: app === true,
      input: rule,
    };
  });
}

/**
 * What a rule is tried against by default: what the reader reads of the post (its text, its headline
 * with the markdown marks out, its links), or with `field: "stream"` the stream's name. A
 * stream's name is not tried by default: `whale` would match every post of Whale Alerts.
 */
function readText(entry: Entry): string {
  return [entry.text ?? '', entry.headline, ...entry.links].join('\n');
}

/** The first rule that matches acts, as a filter list does; undefined when none does or the text is hidden. */
export function firstMatch(rules: readonly AlertRule[], entry: Entry): number | undefined {
  if (entry.text === null) return undefined;
  // Made once for all the rules, and only when one asks for it.
  let read: string | undefined;
  const index = rules.findIndex(
    (rule) =>
      (rule.streams === undefined || rule.streams.has(entry.streamId)) &&
      rule.pattern.test(rule.field === 'stream' ? entry.streamName : (read ??= readText(entry))),
  );
  return index === -1 ? undefined : index;
}
