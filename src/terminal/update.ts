// The one entry for what changes the terminal's state: a key, a post, the connection, a second passing.
// `update(state, event)` returns the state and the effects it asks of the world outside
// (effects.ts carries them out). The state is the model (model.ts): the buffer, the
// selection and the list's scroll, the search, the keys' mode, the pins and the rules.
import type { Post } from '../protocol/types.js';
import { handleKey } from './bindings.js';
import type { TerminalEffect } from './effects.js';
import type { KeyPress } from './key-parser.js';
import type { ConnectionView, Placement, TerminalModel } from './model.js';

/** The terminal's one state. */
export type TerminalState = TerminalModel;

export type TerminalEvent =
  /** A key; `pageRows` is how far PgUp and PgDn move (the list's height). */
  | { kind: 'key'; input: string; key: KeyPress; pageRows: number }
  /** A post delivered, or a release or an update of one; `history` when `--last` replayed it. */
  | { kind: 'post'; post: Post; history: boolean }
  /** A second passed: ages, countdowns and messages move on. */
  | { kind: 'tick' }
  /** A line for the footer: what an effect did, or why it could not. */
  | { kind: 'say'; text: string }
  /** The connection as the header tells it. */
  | { kind: 'connection'; connection: ConnectionView }
  /** The service's clock as it last said (`connected`, `sub_ack`). */
  | { kind: 'service-time'; iso: string | undefined }
  /** A stream subscribed to, and its name once looked up. */
  | { kind: 'stream'; id: string; name?: string | undefined }
  /**
   * A frame was drawn: where it put the list (kept to the selection) and the detail pane
   * (taken back from past its end), which only the frame, knowing the screen, can say.
   */
  | { kind: 'drawn'; placed: Placement };

export interface Step {
  state: TerminalState;
  effects: TerminalEffect[];
}

/** One event: the state after it, and what it asks of the world outside. */
export function update(state: TerminalState, event: TerminalEvent): Step {
  const step = changed(state, event);
  // A mute, a pin, a rule: what the next session starts with changed, and is to be saved.
  if (state.takeUnsaved()) step.effects.push({ kind: 'save', remembered: state.remembered() });
  return step;
}

function changed(state: TerminalState, event: TerminalEvent): Step {
  switch (event.kind) {
    case 'key': {
      const effect = handleKey(state, event.input, event.key, event.pageRows);
      return { state, effects: effect === undefined ? [] : [effect] };
    }
    case 'post':
      return {
        state,
        effects: state.add(event.post, event.history).map((alert) => ({ ...alert, kind: alert.action })),
      };
    case 'tick':
      state.tick();
      break;
    case 'say':
      state.say(event.text);
      break;
    case 'connection':
      state.setConnection(event.connection);
      break;
    case 'service-time':
      state.setServiceTime(event.iso);
      break;
    case 'stream':
      state.knowStream(event.id, event.name);
      break;
    case 'drawn':
      state.place(event.placed);
  }
  return { state, effects: [] };
}
