import type { TerminalModel } from './model.js';
import { ruleFromLine } from './rule-line.js';

/** A key as read from the terminal, besides its text. */
export interface KeyPress {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  home?: boolean;
  end?: boolean;
  return?: boolean;
  escape?: boolean;
  ctrl?: boolean;
  backspace?: boolean;
  delete?: boolean;
}

/** What a key asks of the world outside the model. */
export type KeyEffect =
  | { kind: 'quit' }
  | { kind: 'open'; link: number }
  | { kind: 'copy'; what: 'link' | 'text' }
  | { kind: 'reconnect' }
  | { kind: 'suspend' }
  | undefined;

export type Overlay = 'help' | 'picker' | 'alerts' | 'pins';

/** The screen's modes besides the feed: the model's, so one keypress is one pure step. */
export interface KeyState {
  overlay: Overlay | undefined;
  /** Typing a search after `/`. */
  typing: boolean;
  pickerIndex: number;
  /** The rule the `a` screen's selection is on. */
  ruleIndex: number;
  /** A rule being typed on the `a` screen (`+`), and why it is not one yet. */
  rule: { text: string; error: string | undefined } | undefined;
}

export function initialKeyState(): KeyState {
  return { overlay: undefined, typing: false, pickerIndex: 0, ruleIndex: 0, rule: undefined };
}

/** Every key, as the `?` overlay lists them. */
export const KEY_HELP: readonly (readonly [keys: string, what: string])[] = [
  ['j k ↓ ↑', 'move down / up'],
  ['g G Home End', 'newest / oldest'],
  ['PgUp PgDn', 'a page up / down'],
  ['Enter', 'show / hide the detail pane'],
  ['J K', 'scroll the detail pane'],
  ['/', 'search (case-insensitive regex; $BTC is the cashtag) over the whole buffer'],
  ['n N', 'next / previous match'],
  ['Esc', 'clear the search, close an overlay'],
  ['f', 'streams: m mute, s solo, Enter close (muted sources too)'],
  ['t', "only the selected post's first coin / every coin"],
  ['M', "mute the selected post's source (f shows it again)"],
  ['space', 'pause / resume (new posts are counted)'],
  ['o  1-9', "open the post's first / n-th link"],
  ['y Y', 'copy the link / the text (OSC 52)'],
  ['p', 'pin / unpin'],
  ['P', 'all pinned posts'],
  ['a', 'alert rules and their matches: + add, d remove'],
  ['c', 'a column per stream (the busiest 4)'],
  ['r', 'reconnect now'],
  ['?', 'this list'],
  ['Ctrl-Z', "suspend (the shell's fg brings it back)"],
  ['q Ctrl-C', 'quit'],
];

const OVERLAY_KEYS = { '?': 'help', f: 'picker', a: 'alerts', P: 'pins' } as const satisfies Record<string, Overlay>;

/** One key: changes the model and the key state, and says what else must happen. */
export function handleKey(
  model: TerminalModel,
  state: KeyState,
  input: string,
  key: KeyPress,
  pageRows: number,
): KeyEffect {
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
  if (key.downArrow === true || input === 'j') model.move(1);
  else if (key.upArrow === true || input === 'k') model.move(-1);
  else if (key.pageDown === true) model.move(pageRows);
  else if (key.pageUp === true) model.move(-pageRows);
  else if (key.home === true || input === 'g') model.top();
  else if (key.end === true || input === 'G') model.bottom();
  else if (key.return === true) model.toggleDetail();
  else if (key.escape === true) {
    if (model.searching) model.clearSearch();
    else if (model.detailOpen) model.toggleDetail();
  } else return letterKey(model, state, input);
  return undefined;
}

function letterKey(model: TerminalModel, state: KeyState, input: string): KeyEffect {
  switch (input) {
    case 'q':
      return { kind: 'quit' };
    case '/':
      state.typing = true;
      model.setSearch('');
      return undefined;
    case 'n':
      model.nextMatch(1);
      return undefined;
    case 'N':
      model.nextMatch(-1);
      return undefined;
    case 'J':
      model.scrollDetail(1);
      return undefined;
    case 'K':
      model.scrollDetail(-1);
      return undefined;
    case ' ':
      model.togglePause();
      return undefined;
    case 'o':
      return { kind: 'open', link: 1 };
    case 'y':
      return { kind: 'copy', what: 'link' };
    case 'Y':
      return { kind: 'copy', what: 'text' };
    case 'p':
      model.togglePin();
      return undefined;
    case 'c':
      model.toggleColumns();
      return undefined;
    case 't':
      model.toggleCoin();
      return undefined;
    case 'M':
      model.toggleSourceMute();
      return undefined;
    case 'r':
      return { kind: 'reconnect' };
    case '?':
    case 'f':
    case 'a':
    case 'P':
      // The picker opens where it was left.
      state.overlay = OVERLAY_KEYS[input];
      model.tick();
      return undefined;
    default:
      if (/^[1-9]$/.test(input)) return { kind: 'open', link: Number(input) };
      return undefined;
  }
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

// The final of a CSI or SS3 sequence (ESC [ 1 ; 5 A, ESC O A): the key, whatever the modifiers.
const SEQUENCE_KEYS: Record<string, KeyPress> = {
  A: { upArrow: true },
  B: { downArrow: true },
  H: { home: true },
  F: { end: true },
  '1~': { home: true },
  '7~': { home: true },
  '4~': { end: true },
  '8~': { end: true },
  '5~': { pageUp: true },
  '6~': { pageDown: true },
  '3~': { delete: true },
};
const CSI = /\u001B\[([0-?]*)[ -/]*([@-~])/y;

/**
 * A read cut before the end of a key's sequence (`ESC [`, `ESC [ 1 ;`, `ESC O`: over a slow
 * link a sequence can come in two reads) split into what can be taken now and the start
 * to keep for the next read. A lone ESC is the Escape key, taken at once.
 */
export function splitUnfinished(data: string): [whole: string, unfinished: string] {
  // An answer of the terminal's (OSC 11, the background colour) not yet ended is kept whole too.
  const match = /\u001B(?:\[[0-?]*[ -/]*|O|\][^\u0007\u001B]*\u001B?)$/.exec(data);
  return match === null ? [data, ''] : [data.slice(0, match.index), match[0]];
}

/**
 * What one read of the terminal brings, key by key. Keys typed fast, sent by a script or
 * pasted arrive together: each is taken in turn, so `m` then Enter is a mute and a close,
 * not nothing. A key the terminal sends as a sequence (arrows, Home, PgDn) is one key; one
 * not used here is none.
 */
export function parseKeys(data: string): [string, KeyPress][] {
  const keys: [string, KeyPress][] = [];
  for (let at = 0; at < data.length;) {
    const char = String.fromCodePoint(data.codePointAt(at)!);
    at += char.length;
    if (char === '\u001B') {
      const next = data[at];
      if (next === '[') {
        CSI.lastIndex = at - 1;
        const match = CSI.exec(data);
        if (match === null) {
          keys.push(['', { escape: true }]);
          continue;
        }
        at = CSI.lastIndex;
        const final = match[2]!;
        const key = SEQUENCE_KEYS[final === '~' ? `${match[1]!.split(';')[0]}~` : final];
        if (key !== undefined) keys.push(['', key]);
      } else if (next === ']') {
        // The terminal's answer to a question (the background colour) that came late: no key.
        const end = /\u0007|\u001B\\/g;
        end.lastIndex = at;
        at = end.exec(data) === null ? data.length : end.lastIndex;
      } else if (next === 'O' && at + 1 < data.length) {
        const key = SEQUENCE_KEYS[data[at + 1]!];
        at += 2;
        if (key !== undefined) keys.push(['', key]);
      } else keys.push(['', { escape: true }]);
    } else if (char === '\r' || char === '\n') keys.push(['', { return: true }]);
    else if (char === '\u007F' || char === '\b') keys.push(['', { backspace: true }]);
    else if (char.charCodeAt(0) < 0x20) {
      // Ctrl and a letter; tab and the other controls are no key here.
      const code = char.charCodeAt(0);
      if (code >= 1 && code <= 26 && char !== '\t') keys.push([String.fromCharCode(code + 96), { ctrl: true }]);
    } else keys.push([char, {}]);
  }
  return keys;
}
