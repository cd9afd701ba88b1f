// What the terminal's model is told and tells: its options, the connection as the header
// shows it, a stream as the picker lists it, and what an alert asks of the world outside.
import type { Post } from '../protocol/types.js';
import type { AlertRule, AlertRuleInput } from './alerts.js';
import type { Entry } from './entry.js';

/** The connection as the header tells it. */
export type ConnectionView =
  | { kind: 'connecting'; attempt: number }
  | { kind: 'subscribing' }
  | { kind: 'connected'; reconnected: boolean }
  | { kind: 'reconnecting'; attempt: number; delayMs: number; sinceMs: number }
  | { kind: 'closed'; reason: string };

/** What an alert asks of the world outside the model: the terminal does it. */
export interface AlertEffect {
  action: 'bell' | 'notify' | 'exec';
  rule: AlertRule;
  entry: Entry;
  post: Post;
}

export interface ModelOptions {
  /** Posts kept; the oldest go first. */
  capacity: number;
  /** Pins held, apart from the posts kept (default DEFAULT_MAX_PINS); past it the oldest pin goes. */
  maxPins?: number;
  rules?: readonly AlertRule[];
  /** Only posts whose text matches are kept (`--match`). */
  match?: RegExp | undefined;
  now?: () => number;
  /** Symbols a `#HASHTAG` is a coin for (default: the package's list). */
  coins?: ReadonlySet<string>;
  /** What the last session left: mutes, solo, pins by id (rules are in `rules`). */
  restored?: Partial<Remembered> | undefined;
  /** Told when something the next session keeps changed. */
  remembered?: () => void;
}

/** What a session leaves for the next: kept in the profile's `terminal` section. */
export interface Remembered {
  /** Stream ids muted. */
  muted: string[];
  solo: string | null;
  /** Sources muted on their own (`M`). */
  mutedSources: string[];
  /** Pinned posts by id, the oldest pin first. */
  pins: string[];
  /** The rules added in the terminal (the `a` screen). */
  rules: AlertRuleInput[];
}

export interface StreamInfo {
  id: string;
  name: string;
  /** Posts of it in the buffer. */
  count: number;
}
