import { knownCoins } from './coins.js';
import type { AlertRule } from './alerts.js';
import { SessionMemory, type MemoryOptions } from './memory.js';
import type { ModelOptions, Remembered } from './model.js';
import { restoredRules } from './rule-line.js';

/** A profile's `terminal` section, as the command checked it. */
export interface CheckedSection {
  coins: readonly string[];
  remembered: Partial<Remembered>;
  /** Why the saved session was not used. */
  warning: string | undefined;
}

export interface Remembering {
  /** The rules the last session added, after the others. */
  rules: AlertRule[];
  /** What the model starts with: the coins known, the mutes, solo and pins restored, and who to tell of a change. */
  model: Pick<ModelOptions, 'coins' | 'restored'>;
  /** Keeps what changed, written a moment later (a burst of changes writes once). */
  save(remembered: Remembered): void;
  /**
   * Starts telling `say` (the footer's message, through the terminal's update) what could not
   * be restored, and later what could not be saved.
   */
  start(say: (text: string) => void): void;
  /** Writes what is pending. */
  close(): Promise<void>;
}

/**
 * The session kept across starts in the profile's `terminal` section: restored from
 * `section`, kept through `memory` (none: nothing is kept, as for the demo).
 */
export function remembering(
  section: CheckedSection | undefined,
  memory: Omit<MemoryOptions, 'report'> | undefined,
): Remembering {
  let say: ((text: string) => void) | undefined;
  const { rules, problems } = restoredRules(section?.remembered.rules ?? []);
  const warnings = [
    ...(section?.warning === undefined ? [] : [section.warning]),
    ...problems.map((problem) => `a saved rule was left out: ${problem}`),
  ];
  const kept = memory === undefined ? undefined : new SessionMemory({ ...memory, report: (text) => say?.(text) });
  const { muted, solo, mutedSources, pins } = section?.remembered ?? {};
  const restored = { muted, solo, mutedSources, pins };
  return {
    rules,
    model: {
      coins: knownCoins(section?.coins),
      restored,
    },
    save: (remembered) => kept?.soon(() => remembered),
    start(told) {
      say = told;
      if (warnings.length > 0) told(warnings.join('; '));
    },
    close: async () => kept?.close(),
  };
}
