// What each key does, mode by mode, and what the screen says of it: the `?` list and the
// footer are made from the same table as the feed's keys, so they cannot disagree. The keys
// themselves come from key-parser.ts.
import type { KeyEffect } from './effects.js';
import type { KeyPress } from './key-parser.js';
import type { KeyState, Overlay, TerminalModel } from './model.js';
import { ruleFromLine } from './rule-line.js';

/** A key of the feed (the screen with no overlay and nothing typed): what it does and how the screen names it. */
interface Binding {
  /** The keys as the `?` list names them. */
  keys: string;
  what: string;
  /** The characters that do it (a Ctrl with the letter too), and the keys sent as sequences. */
  inputs?: readonly string[];
  presses?: readonly (keyof KeyPress)[];
  /** None: the key acts in every mode (handleKey). */
  act?: (model: TerminalModel, state: KeyState, input: string, key: KeyPress, pageRows: number) => KeyEffect;
  /** In the footer: its words, the narrowest footer it is still in (0, the widest, to 3, all), its words there. */
  footer?: { words: string; in: 0 | 1 | 2 | 3; short?: string };
}

const openOverlay =
  (overlay: Overlay) =>
  (model: TerminalModel, state: KeyState): KeyEffect => {
    // The picker opens where it was left.
    state.overlay = overlay;
    model.tick();
    return undefined;
  };

/** Every key of the feed, in the order the `?` list shows them. */
const BINDINGS: readonly Binding[] = [
  {
    keys: 'j k ↓ ↑',
    what: 'move down / up',
    inputs: ['j', 'k'],
    presses: ['downArrow', 'upArrow'],
    act: (model, _, input, key) => void model.move(key.downArrow === true || input === 'j' ? 1 : -1),
    footer: { words: 'j/k move', in: 3, short: 'j/k' },
  },
  {
    keys: 'g G Home End',
    what: 'newest / oldest',
    inputs: ['g', 'G'],
    presses: ['home', 'end'],
    act: (model, _, input, key) => void (key.home === true || input === 'g' ? model.top() : model.bottom()),
  },
  {
    keys: 'PgUp PgDn',
    what: 'a page up / down',
    presses: ['pageUp', 'pageDown'],
    act: (model, _, __, key, pageRows) => void model.move(key.pageDown === true ? pageRows : -pageRows),
  },
  {
    keys: 'Enter',
    what: 'show / hide the detail pane',
    presses: ['return'],
    act: (model) => void model.toggleDetail(),
    footer: { words: 'Enter detail', in: 3 },
  },
  {
    keys: 'J K',
    what: 'scroll the detail pane',
    inputs: ['J', 'K'],
    act: (model, _, input) => void model.scrollDetail(input === 'J' ? 1 : -1),
  },
  {
    keys: '/',
    what: 'search (case-insensitive regex; $BTC is the cashtag) over the whole buffer',
    inputs: ['/'],
    act: (model, state) => {
      state.typing = true;
      model.setSearch('');
      return undefined;
    },
    footer: { words: '/ search', in: 3 },
  },
  {
    keys: 'n N',
    what: 'next / previous match',
    inputs: ['n', 'N'],
    act: (model, _, input) => void model.nextMatch(input === 'n' ? 1 : -1),
  },
  {
    keys: 'Esc',
    what: 'clear the search, close an overlay',
    presses: ['escape'],
    act: (model) => {
      if (model.searching) model.clearSearch();
      else if (model.detailOpen) model.toggleDetail();
      return undefined;
    },
  },
  {
    keys: 'f',
    what: 'streams: m mute, s solo, Enter close (muted sources too)',
    inputs: ['f'],
    act: openOverlay('picker'),
    footer: { words: 'f streams', in: 3 },
  },
  {
    keys: 't',
    what: "only the selected post's first coin / every coin",
    inputs: ['t'],
    act: (model) => void model.toggleCoin(),
    footer: { words: 't coin', in: 0 },
  },
  {
    keys: 'M',
    what: "mute the selected post's source (f shows it again)",
    inputs: ['M'],
    act: (model) => void model.toggleSourceMute(),
    footer: { words: 'M mute source', in: 0 },
  },
  {
    keys: 'space',
    what: 'pause / resume (new posts are counted)',
    inputs: [' '],
    act: (model) => void model.togglePause(),
    footer: { words: 'space pause', in: 2 },
  },
  {
    keys: 'o  1-9',
    what: "open the post's first / n-th link",
    inputs: ['o', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
    act: (_, __, input) => ({ kind: 'open', link: input === 'o' ? 1 : Number(input) }),
    footer: { words: 'o open', in: 2 },
  },
  {
    keys: 'y Y',
    what: 'copy the link / the text (OSC 52)',
    inputs: ['y', 'Y'],
    act: (_, __, input) => ({ kind: 'copy', what: input === 'y' ? 'link' : 'text' }),
  },
  {
    keys: 'p',
    what: 'pin / unpin',
    inputs: ['p'],
    act: (model) => void model.togglePin(),
    footer: { words: 'p pin', in: 1 },
  },
  { keys: 'P', what: 'all pinned posts', inputs: ['P'], act: openOverlay('pins') },
  {
    keys: 'a',
    what: 'alert rules and their matches: + add, d remove',
    inputs: ['a'],
    act: openOverlay('alerts'),
    footer: { words: 'a alerts', in: 1 },
  },
  {
    keys: 'c',
    what: 'a column per stream (the busiest 4)',
    inputs: ['c'],
    act: (model) => void model.toggleColumns(),
    footer: { words: 'c columns', in: 1 },
  },
  { keys: 'r', what: 'reconnect now', inputs: ['r'], act: () => ({ kind: 'reconnect' }) },
  { keys: '?', what: 'this list', inputs: ['?'], act: openOverlay('help'), footer: { words: '? keys', in: 3 } },
  { keys: 'Ctrl-Z', what: "suspend (the shell's fg brings it back)" },
  { keys: 'q Ctrl-C', what: 'quit', inputs: ['q'], act: () => ({ kind: 'quit' }), footer: { words: 'q quit', in: 3 } },
];

/** Every key, as the `?` overlay lists them. */
export const KEY_HELP: readonly (readonly [keys: string, what: string])[] = BINDINGS.map((binding) => [
  binding.keys,
  binding.what,
]);

/** The feed's footer at four widths, the widest first: the most keys that fit, never a cut word. */
export const FOOTERS: readonly string[] = ([0, 1, 2, 3] as const).map((width) =>
  BINDINGS.flatMap(({ footer }) =>
    footer === undefined || footer.in < width ? [] : [width === 3 ? (footer.short ?? footer.words) : footer.words],
  ).join('  '),
);

/** What the other modes' screens say of their keys. */
export const MODE_HINTS = {
  help: 'any key closes',
  pins: 'any key closes',
  alerts: 'j/k move, + add, d remove, any other key closes',
  picker: 'j/k move, m mute/unmute, s solo, Enter close',
  search: 'Enter keep, Esc clear',
  rule: 'ACTION[:COLOUR] REGEX (bell notify highlight pin mute; highlight:red ETF)  Enter add, Esc cancel',
} as const;

const BY_INPUT = new Map(
  BINDINGS.flatMap((binding) => (binding.inputs ?? []).map((input) => [input, binding] as const)),
);
const BY_PRESS = BINDINGS.flatMap((binding) => (binding.presses ?? []).map((press) => [press, binding] as const));

/** A key of the feed: its binding's, if it has one. */
function feedKey(model: TerminalModel, state: KeyState, input: string, key: KeyPress, pageRows: number): KeyEffect {
  const binding = BY_PRESS.find(([press]) => key[press] === true)?.[1] ?? BY_INPUT.get(input);
  return binding?.act?.(model, state, input, key, pageRows);
}

/** One key: changes the model and the key state, and says what else must happen. */
export function handleKey(model: TerminalModel, input: string, key: KeyPress, pageRows: number): KeyEffect {
  const state = model.keys;
  if (key.ctrl === true && input === 'c') return { kind: 'quit' };
  // Raw mode turns off the terminal's own Ctrl-Z: the shell's job control is asked for here.
  if (key.ctrl === true && input === 'z') return { kind: 'suspend' };
  if (state.typing) {
    typeSearch(model, state, input, key);
    return undefined;
  }
  if (state.rule !== undefined) {
    typeRule(model, state, input, key);
    return undefined;
  }
  if (state.overlay !== undefined) return overlayKey(model, state, input, key);
  return feedKey(model, state, input, key, pageRows);
}

function typeSearch(model: TerminalModel, state: KeyState, input: string, key: KeyPress): void {
  if (key.return === true) {
    state.typing = false;
    if (model.searchError !== undefined)
      model.say(
        model.searching
          ? `search kept as /${model.searchPattern}/: ${model.searchError}`
          : `no search: ${model.searchError}`,
      );
    else model.tick();
  } else if (key.escape === true) {
    state.typing = false;
    model.clearSearch();
  } else if (key.backspace === true || key.delete === true) {
    model.setSearch(model.searchText.slice(0, -1));
  } else if (input !== '' && key.ctrl !== true) {
    // Pasted text arrives as one input; control characters never become part of the pattern.
    model.setSearch(model.searchText + input.replace(/[\u0000-\u001F\u007F]/g, ''));
  }
}

/** Typing a rule on the `a` screen: Enter adds it (it acts at once), Esc gives up. */
function typeRule(model: TerminalModel, state: KeyState, input: string, key: KeyPress): void {
  const typed = state.rule!;
  if (key.escape === true) state.rule = undefined;
  else if (key.return === true) {
    const made = ruleFromLine(typed.text, model.rules);
    if (typeof made === 'string') typed.error = made;
    else {
      model.addRule(made);
      model.say(`added ${made.name}: ${made.action} /${made.source}/`);
      state.rule = undefined;
      state.ruleIndex = model.rules.length - 1;
    }
  } else if (key.backspace === true || key.delete === true) {
    typed.text = typed.text.slice(0, -1);
    typed.error = undefined;
  } else if (input !== '' && key.ctrl !== true) {
    typed.text += input.replace(/[\u0000-\u001F\u007F]/g, '');
    typed.error = undefined;
  }
  model.tick();
}

function overlayKey(model: TerminalModel, state: KeyState, input: string, key: KeyPress): KeyEffect {
  if (input === 'q' && state.overlay !== 'picker') return { kind: 'quit' };
  if (state.overlay === 'picker') {
    // The streams, then the sources muted on their own.
    const streams = model.streams();
    const sources = model.mutedSources();
    const last = streams.length + sources.length - 1;
    const at = Math.min(state.pickerIndex, last);
    const current = streams[at];
    const source = current === undefined ? sources[at - streams.length] : undefined;
    if (key.downArrow === true || input === 'j') state.pickerIndex = Math.max(0, Math.min(last, state.pickerIndex + 1));
    else if (key.upArrow === true || input === 'k') state.pickerIndex = Math.max(0, state.pickerIndex - 1);
    else if ((input === 'm' || input === ' ') && current) model.toggleMute(current.id);
    else if ((input === 'm' || input === ' ') && source !== undefined) {
      model.toggleSourceMute(source);
      state.pickerIndex = Math.max(0, Math.min(state.pickerIndex, last - 1));
    } else if (input === 's' && current) model.toggleSolo(current.id);
    else if (key.return === true || key.escape === true || input === 'f' || input === 'q') state.overlay = undefined;
    model.tick();
    return undefined;
  }
  if (state.overlay === 'alerts') {
    const last = model.rules.length - 1;
    const rule = model.rules[Math.min(state.ruleIndex, last)];
    if (key.downArrow === true || input === 'j') state.ruleIndex = Math.max(0, Math.min(last, state.ruleIndex + 1));
    else if (key.upArrow === true || input === 'k') state.ruleIndex = Math.max(0, state.ruleIndex - 1);
    else if (input === '+') state.rule = { text: '', error: undefined };
    else if (input === 'd' && rule !== undefined) {
      model.removeRule(rule);
      // A rule of the command line or the profile is written there: it is back at the next start.
      const where = rule.name.startsWith('--') ? 'the command line' : "the profile's alerts";
      model.say(rule.app ? `removed ${rule.name}` : `removed ${rule.name} until the next start (it is in ${where})`);
      state.ruleIndex = Math.max(0, Math.min(state.ruleIndex, last - 1));
    } else if (input === 'q') return { kind: 'quit' };
    else state.overlay = undefined;
    model.tick();
    return undefined;
  }
  state.overlay = undefined;
  model.tick();
  return undefined;
}
