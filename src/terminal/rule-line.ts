import { ALERT_ACTIONS, AlertRuleError, compileRules, type AlertRule, type AlertRuleInput } from './alerts.js';

/** What a rule typed on the `a` screen may do: an `exec` rule runs a command, so it is written in the profile. */
const TYPED_ACTIONS = ALERT_ACTIONS.filter((action) => action !== 'exec');

/** `app rule N`, N one past the highest so far: a removed rule's name is not given again. */
function nextName(rules: readonly AlertRule[]): string {
  const numbers = rules.map((rule) => /^app rule (\d+)$/.exec(rule.name)?.[1]).filter((n) => n !== undefined);
  return `app rule ${Math.max(0, ...numbers.map(Number)) + 1}`;
}

/**
 * A rule as typed on the `a` screen, `ACTION[:COLOUR] REGEX` (`highlight:red ETF|CPI`), or
 * only `REGEX` (a bell, as `--alert`): the rule, or why it is not one.
 */
export function ruleFromLine(line: string, rules: readonly AlertRule[]): AlertRule | string {
  const text = line.trim();
  if (text === '') return 'type a pattern, e.g. highlight:red ETF';
  const [, first = '', colour, rest = ''] = /^([a-z]+)(?::(\S*))?(?:\s+(.*))?$/s.exec(text) ?? [];
  if (first === 'exec') return 'exec rules run a command: write them in the profile';
  const action = (TYPED_ACTIONS as readonly string[]).includes(first) ? first : undefined;
  if (action !== undefined && rest.trim() === '') return `${action} needs a pattern after it`;
  const input = (
    action === undefined
      ? { match: text, action: 'bell' }
      : { match: rest.trim(), action, ...(colour === undefined ? {} : { color: colour }) }
  ) as AlertRuleInput;
  try {
    return compileRules([{ name: nextName(rules), rule: input, app: true }])[0]!;
  } catch (error) {
    if (error instanceof AlertRuleError) return error.message.replace(/^alert rule [^:]*: /, '');
    throw error;
  }
}

/** The rules the last session added: compiled as they were; a rule that no longer compiles is left out and named. */
export function restoredRules(inputs: readonly AlertRuleInput[]): { rules: AlertRule[]; problems: string[] } {
  const rules: AlertRule[] = [];
  const problems: string[] = [];
  for (const input of inputs) {
    try {
      rules.push(...compileRules([{ name: nextName(rules), rule: input, app: true }]));
    } catch (error) {
      if (!(error instanceof AlertRuleError)) throw error;
      problems.push(error.message);
    }
  }
  return { rules, problems };
}
