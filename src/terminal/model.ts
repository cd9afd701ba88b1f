import type { Post } from '../protocol/types.js';
import { safeLine } from '../render/text.js';
import { compilePattern, firstMatch, patternError, type AlertRule, type AlertRuleInput } from './alerts.js';
import { Entry } from './entry.js';
import { ShownRows } from './shown-rows.js';
import { knownCoins } from './coins.js';

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

export type Overlay = 'help' | 'picker' | 'alerts' | 'pins';

/** The screen's modes besides the feed, held in the model: one keypress is one step of one state. */
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

/** Where the list is scrolled: its first line, and the selected post with the line it was drawn on. */
export interface ListScroll {
  offset: number;
  anchor: { entry: Entry; line: number } | undefined;
}

/** Where a frame put the list and the detail pane. */
export interface Placement {
  list: Readonly<ListScroll>;
  detailScroll: number;
}

/** Pins held at most, unless told otherwise (`--max-pins`). */
export const DEFAULT_MAX_PINS = 50;

/** How long a post released in this session stays marked when it is not selected. */
export const RELEASE_MARK_MS = 60_000;

/**
 * The terminal's one state: the buffer, the filters, the search, the selection and the
 * list's scroll, pause and pins, the keys' mode, the alert rules' effects. The view reads
 * it; keys and posts change it through `update` (update.ts); nothing here draws or does
 * I/O, so tests drive it directly.
 */
export class TerminalModel {
  readonly capacity: number;
  readonly maxPins: number;
  readonly now: () => number;
  #agesAt: number;
  connection: ConnectionView = { kind: 'connecting', attempt: 0 };
  /** The service's clock minus ours, when it said. */
  clockOffsetMs: number | undefined;
  paused = false;
  detailOpen = false;
  columns = false;
  /** Lines the detail pane is scrolled down. */
  detailScroll = 0;
  /** The keys' mode: an overlay, a search or a rule being typed. */
  readonly keys: KeyState = initialKeyState();
  /** Where the list is scrolled, as the last frame put it (kept to the selection: `place`). */
  list: Readonly<ListScroll> = { offset: 0, anchor: undefined };
  /** Why the search as typed is not a regular expression (the last good one is kept). */
  searchError: string | undefined;
  /** One line of news for the footer (an opener that failed, a copied link…). */
  message: string | undefined;
  /** Posts hidden by a `mute` rule: counted, never shown. */
  mutedByRule = 0;
  /** Bumped on every change: the view's caches key on it. */
  version = 0;

  #rules: AlertRule[];
  readonly #alertCounts = new Map<AlertRule, number>();
  readonly #knownCoins: ReadonlySet<string>;
  /** `t`: only posts of this coin are shown. */
  #coin: string | undefined;
  readonly #mutedSources = new Set<string>();
  /** Pins of the last session (by id) not yet delivered: pinned as they come. */
  readonly #wantedPins: Set<string>;
  /** Something the next session keeps changed since `update` last asked (see takeUnsaved). */
  #unsaved = false;
  #entries: Entry[] = [];
  readonly #byId = new Map<string, Entry>();
  readonly #streams = new Map<string, string>();
  /** Posts held per stream id. */
  readonly #counts = new Map<string, number>();
  readonly #muted = new Set<string>();
  #solo: string | undefined;
  readonly #match: RegExp | undefined;
  #search: RegExp | undefined;
  /** The text `#search` was made from. */
  #searchPattern = '';
  #searchText = '';
  #pauseSeq = 0;
  #seq = 0;
  /** Pinned posts by id, oldest pin first: held apart from the buffer, so eviction never drops them. */
  readonly #pins = new Map<string, Entry>();
  readonly #alerted = new Map<string, AlertRule>();
  readonly #ruleMuted = new Set<string>();
  /** Released posts the selection has been on: their mark is gone. */
  readonly #releaseSeen = new Set<string>();
  /** The post the selection stays on; undefined while it follows the newest. */
  #selectedId: string | undefined;
  /** The service's time last told (`connected.serverTime`). */
  #serviceTime: string | undefined;
  /** The newest arrival the user saw at the top before the selection stayed on a post. */
  #seenSeq = 0;
  /** The post a pause put the selection on, when it was following the newest. */
  #pausedOn: string | undefined;
  /** The feed as shown (`rows()`), worked out no further than asked. */
  readonly #shownRows: ShownRows;
  /** Bumped when a post comes or goes, or a stream is named: what `streams()` counts. */
  #streamsVersion = 0;
  #streamsCache: { version: number; streams: readonly StreamInfo[] } | undefined;

  constructor(options: ModelOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${options.capacity}`);
    this.capacity = options.capacity;
    this.maxPins = options.maxPins ?? DEFAULT_MAX_PINS;
    if (!Number.isInteger(this.maxPins) || this.maxPins < 1)
      throw new RangeError(`maxPins must be a positive integer, got ${this.maxPins}`);
    this.#rules = [...(options.rules ?? [])];
    this.#knownCoins = options.coins ?? knownCoins();
    const restored = options.restored;
    for (const id of restored?.muted ?? []) this.#muted.add(id);
    for (const source of restored?.mutedSources ?? []) this.#mutedSources.add(source);
    this.#solo = restored?.solo ?? undefined;
    this.#wantedPins = new Set(restored?.pins ?? []);
    this.#match = options.match === undefined ? undefined : new RegExp(options.match.source, 'iu');
    this.now = options.now ?? Date.now;
    this.#agesAt = this.now();
    this.#shownRows = new ShownRows({
      entries: () => this.#entries,
      shown: (entry) => this.#shown(entry),
      pausedAt: () => (this.paused ? this.#pauseSeq : undefined),
      capacity: this.capacity,
    });
  }

  #changed(): void {
    this.version += 1;
  }

  /** A change of what `rows()` holds (posts, filters, pause), not only of how it looks. */
  #rowsChanged(): void {
    this.#shownRows.invalidate();
    this.version += 1;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The newest arrival's sequence number; the header's "N new" counts past the pause. */
  get newSincePause(): number {
    return this.paused ? this.#seq - this.#pauseSeq : 0;
  }

  get searchText(): string {
    return this.#searchText;
  }

  get pinCount(): number {
    return this.#pins.size;
  }

  get searching(): boolean {
    return this.#search !== undefined;
  }

  /** The search in effect: what the list shows and the rows and the detail pane mark. */
  get search(): RegExp | undefined {
    return this.#search;
  }

  /** The search as typed when it was last a regular expression. */
  get searchPattern(): string {
    return this.#searchPattern;
  }

  get solo(): string | undefined {
    return this.#solo;
  }

  isMuted(streamId: string): boolean {
    return this.#muted.has(streamId);
  }

  get filtered(): boolean {
    return (
      this.#search !== undefined ||
      this.#solo !== undefined ||
      this.#muted.size > 0 ||
      this.#coin !== undefined ||
      this.#mutedSources.size > 0
    );
  }

  /** The rules in the order they are tried. */
  get rules(): readonly AlertRule[] {
    return this.#rules;
  }

  /** Posts a rule matched. */
  alertCount(rule: AlertRule): number {
    return this.#alertCounts.get(rule) ?? 0;
  }

  /** The coin `t` filters on. */
  get coin(): string | undefined {
    return this.#coin;
  }

  /** Sources muted on their own (`M`), in the order muted. */
  mutedSources(): readonly string[] {
    return [...this.#mutedSources];
  }

  /** Whether something the next session keeps changed since last asked; asking clears it. */
  takeUnsaved(): boolean {
    const unsaved = this.#unsaved;
    this.#unsaved = false;
    return unsaved;
  }

  /** What the next session starts with: mutes, solo, pins by id, and the rules added here. */
  remembered(): Remembered {
    return {
      muted: [...this.#muted],
      solo: this.#solo ?? null,
      mutedSources: [...this.#mutedSources],
      pins: [...this.#wantedPins, ...this.#pins.keys()].slice(-this.maxPins),
      rules: this.#rules.filter((rule) => rule.app).map((rule) => rule.input),
    };
  }

  /**
   * Streams known from the subscription and from posts, by name (the picker's order stays
   * put). Made again only after a change: the header asks on every frame.
   */
  streams(): readonly StreamInfo[] {
    if (this.#streamsCache?.version === this.#streamsVersion) return this.#streamsCache.streams;
    const streams = [...this.#streams]
      .map(([id, name]) => ({ id, name, count: this.#counts.get(id) ?? 0 }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    this.#streamsCache = { version: this.#streamsVersion, streams };
    return streams;
  }

  /** A stream named by the network (a subscription's ids, a name looked up): both sanitized here, as a post's are. */
  knowStream(rawId: string, rawName?: string): void {
    const id = safeLine(rawId);
    const name = rawName === undefined ? undefined : safeLine(rawName) || undefined;
    if (id === '') return;
    if (name !== undefined || !this.#streams.has(id)) this.#streams.set(id, name ?? this.#streams.get(id) ?? id);
    this.#streamsVersion += 1;
    this.#changed();
  }

  setConnection(connection: ConnectionView): void {
    // A close reason is the service's text.
    this.connection =
      connection.kind === 'closed' ? { kind: 'closed', reason: safeLine(connection.reason) } : connection;
    this.#changed();
  }

  setServiceTime(iso: string | undefined): void {
    // The same moment told again later (once subscribed) would put the offset late by the wait.
    if (iso === this.#serviceTime) return;
    this.#serviceTime = iso;
    const ms = iso === undefined ? Number.NaN : Date.parse(iso);
    if (!Number.isNaN(ms)) this.clockOffsetMs = ms - this.now();
    this.#changed();
  }

  /** A line for the footer: it may quote the network (an address, a command's failure), so it is sanitized. */
  say(message: string | undefined): void {
    this.message = message === undefined ? undefined : safeLine(message);
    this.#changed();
  }

  /**
   * A post delivered (new, or the release of one already shown: then the same row turns
   * visible). Returns what its alert rule asks the terminal to do.
   */
  add(post: Post, history: boolean): AlertEffect[] {
    const previous = this.#byId.get(post.id) ?? this.#pins.get(post.id);
    // A second delivery of a post already shown with its text changes nothing: never shown twice.
    if (previous !== undefined && (previous.text !== null || post.text === null)) return [];
    if (previous === undefined && post.text !== null && this.#match && !this.#match.test(post.text)) return [];
    const entry = new Entry(post, history, ++this.#seq, previous, this.now(), this.#knownCoins);
    this.#streams.set(entry.streamId, entry.streamName);
    this.#streamsVersion += 1;
    this.#byId.set(entry.id, entry);
    if (previous === undefined) {
      this.#entries.push(entry);
      this.#counts.set(entry.streamId, (this.#counts.get(entry.streamId) ?? 0) + 1);
      const dropped = this.#trim();
      if (this.#shownRows.arrived(entry, dropped)) this.#changed();
      else this.#rowsChanged();
    } else {
      // A release is news now: the post goes to the top, as if it had just come.
      const at = this.#entries.lastIndexOf(previous);
      if (at !== -1) this.#entries.splice(at, 1);
      this.#entries.push(entry);
      // A pin the buffer had let go comes back into it with its release.
      if (at === -1) {
        this.#counts.set(entry.streamId, (this.#counts.get(entry.streamId) ?? 0) + 1);
        this.#trim();
      }
      if (this.#pins.has(entry.id)) this.#pins.set(entry.id, entry);
      this.#rowsChanged();
    }
    if (this.#wantedPins.delete(entry.id)) this.#pin(entry);
    return this.#alert(entry, post, history);
  }

  /** Drops the oldest posts beyond the capacity; returns them. */
  #trim(): Entry[] {
    const over = this.#entries.length - this.capacity;
    if (over <= 0) return [];
    const dropped = this.#entries.splice(0, over);
    for (const gone of dropped) {
      this.#counts.set(gone.streamId, (this.#counts.get(gone.streamId) ?? 1) - 1);
      this.#byId.delete(gone.id);
      // A pin keeps its post, and the post its alert mark, after the buffer let it go.
      if (!this.#pins.has(gone.id)) this.#alerted.delete(gone.id);
      this.#ruleMuted.delete(gone.id);
      this.#releaseSeen.delete(gone.id);
    }
    return dropped;
  }

  /** What the first rule that matches does; `post` undefined: a rule added later, tried on what is held (nothing rings). */
  #alert(entry: Entry, post: Post | undefined, history: boolean): AlertEffect[] {
    if (this.#rules.length === 0 || this.#alerted.has(entry.id)) return [];
    const index = firstMatch(this.#rules, entry);
    if (index === undefined) return [];
    const rule = this.#rules[index]!;
    this.#alerted.set(entry.id, rule);
    this.#alertCounts.set(rule, this.alertCount(rule) + 1);
    switch (rule.action) {
      case 'mute':
        this.#ruleMuted.add(entry.id);
        this.mutedByRule += 1;
        return [];
      case 'pin':
        this.#pin(entry);
        return [];
      case 'highlight':
        return [];
      default:
        // The past is not news: history is marked, but rings nothing and runs nothing.
        return history || post === undefined ? [] : [{ action: rule.action, rule, entry, post }];
    }
  }

  /** Adds a rule after the others; it acts at once on the posts held (marks, pins, mutes; nothing rings). */
  addRule(rule: AlertRule): void {
    this.#rules.push(rule);
    this.#rulesChanged();
  }

  /** Takes a rule away: the posts it marked or muted are tried again on the rules left. */
  removeRule(rule: AlertRule): void {
    const at = this.#rules.indexOf(rule);
    if (at === -1) return;
    this.#rules.splice(at, 1);
    this.#alertCounts.delete(rule);
    for (const [id, matched] of this.#alerted) {
      if (matched !== rule) continue;
      this.#alerted.delete(id);
      if (this.#ruleMuted.delete(id)) this.mutedByRule -= 1;
    }
    this.#rulesChanged();
  }

  #rulesChanged(): void {
    for (const entry of this.#entries) if (entry.text !== null) this.#alert(entry, undefined, true);
    this.#unsaved = true;
    this.#rowsChanged();
  }

  /** A post released in this session, marked until it is selected or RELEASE_MARK_MS pass. */
  freshRelease(entry: Entry): boolean {
    return (
      entry.releasedAtMs !== undefined &&
      !this.#releaseSeen.has(entry.id) &&
      this.now() - entry.releasedAtMs < RELEASE_MARK_MS
    );
  }

  /** The rule that matched a post, if any. */
  alertOf(id: string): AlertRule | undefined {
    return this.#alerted.get(id);
  }

  entry(id: string): Entry | undefined {
    return this.#byId.get(id);
  }

  /** Pinned posts, the newest pin first. */
  pinned(): Entry[] {
    return [...this.#pins.values()].reverse();
  }

  /** Pins a post; past `maxPins` the oldest pin is let go. Returns whether one was. */
  #pin(entry: Entry): boolean {
    if (this.#pins.has(entry.id)) return false;
    this.#pins.set(entry.id, entry);
    this.#unsaved = true;
    if (this.#pins.size <= this.maxPins) return false;
    this.#unpin(this.#pins.keys().next().value!);
    return true;
  }

  /** Lets a pin go; a post the buffer let go too is forgotten whole. Returns whether it was pinned. */
  #unpin(id: string): boolean {
    if (!this.#pins.delete(id)) return false;
    this.#unsaved = true;
    if (!this.#byId.has(id)) this.#alerted.delete(id);
    return true;
  }

  #shown(entry: Entry): boolean {
    // Tried for every post held on a search key: the empty sets are not asked.
    if (this.#ruleMuted.size > 0 && this.#ruleMuted.has(entry.id)) return false;
    if (this.#solo !== undefined) {
      if (entry.streamId !== this.#solo) return false;
    } else if (this.#muted.size > 0 && this.#muted.has(entry.streamId)) return false;
    if (this.#mutedSources.size > 0 && entry.source !== undefined && this.#mutedSources.has(entry.source)) return false;
    if (this.#coin !== undefined && !entry.coins.includes(this.#coin)) return false;
    if (this.paused && entry.seq > this.#pauseSeq) return false;
    if (this.#search !== undefined) {
      if (entry.text === null) return false;
      if (!this.#search.test(entry.searched)) return false;
    }
    return true;
  }

  /** The feed as shown, newest first: filters, search, pause and pins applied. */
  rows(): readonly Entry[] {
    return this.#shownRows.scan(() => false);
  }

  /**
   * At least the first `count` rows (all of them when fewer are shown): what a frame of the
   * list needs. After a search key this tries only as many posts as it takes to fill them.
   */
  firstRows(count: number): readonly Entry[] {
    return this.#shownRows.scan((rows) => rows.length >= count);
  }

  /** How many rows are shown, or undefined while `rows()` is not worked out whole. */
  rowCount(): number | undefined {
    return this.#shownRows.count();
  }

  /**
   * Works out the rows not yet tried (the count a search shows): false when there were
   * none. The terminal does it just after a frame drawn from the first rows only.
   */
  finishRows(): boolean {
    if (this.#shownRows.complete) return false;
    this.rows();
    this.#changed();
    return true;
  }

  /** Where the selection is in `rows()`: the top when nothing is selected or the selected row left the view. */
  selectedIndex(): number {
    if (this.#selectedId === undefined) return 0;
    const entry = this.#byId.get(this.#selectedId);
    // A row gone, or not shown: no list to search.
    if (entry === undefined || !this.#shown(entry)) return 0;
    // Usually near the top: the reader is looking at recent news.
    const at = this.#shownRows.scan(() => true).indexOf(entry);
    if (at !== -1) return at;
    const rows = this.#shownRows.scan((found) => found[found.length - 1] === entry);
    return rows[rows.length - 1] === entry ? rows.length - 1 : 0;
  }

  selected(): Entry | undefined {
    const index = this.selectedIndex();
    return this.firstRows(index + 1)[index];
  }

  /** The row `index` rows down, or past the end the last (clamped): only the rows up to it are worked out. */
  #rowAt(index: number): [Entry | undefined, number] {
    const rows = this.firstRows(Math.max(1, index + 1));
    const at = Math.max(0, Math.min(rows.length - 1, index));
    return [rows[at], at];
  }

  /**
   * The user put the selection on `entry`, `index` rows down. At the top with the detail pane
   * closed it follows the newest post; anywhere else it stays on this post as posts arrive.
   */
  #select(entry: Entry, index: number): void {
    const follow = index === 0 && !this.detailOpen;
    if (!follow) this.#stayOn(entry.id);
    else this.#selectedId = undefined;
    this.#seenSeq = Math.max(this.#seenSeq, entry.seq);
    this.#seen(entry);
    this.detailScroll = 0;
    this.#changed();
  }

  /** The user selected the post: a release's mark is gone. */
  #seen(entry: Entry): void {
    if (entry.releasedAtMs !== undefined) this.#releaseSeen.add(entry.id);
  }

  /** The selection stays on this post: what has arrived so far is seen, what comes later is new above it. */
  #stayOn(id: string | undefined): void {
    if (this.#selectedId === undefined) this.#seenSeq = this.paused ? this.#pauseSeq : this.#seq;
    this.#selectedId = id;
  }

  /** Rows above the selection that came after the user last saw the top: the header's `↑ N new`. */
  newAbove(): number {
    if (this.#selectedId === undefined) return 0;
    const index = this.selectedIndex();
    const rows = this.firstRows(index);
    let count = 0;
    // Rows are newest first: the new ones are all at the top.
    while (count < index && rows[count]!.seq > this.#seenSeq) count += 1;
    return count;
  }

  /** Moves the selection by `delta` rows (clamped). */
  move(delta: number): void {
    const [entry, index] = this.#rowAt(this.selectedIndex() + delta);
    if (entry !== undefined) this.#select(entry, index);
  }

  /** `g`: the newest post. */
  top(): void {
    const [entry] = this.#rowAt(0);
    if (entry !== undefined) this.#select(entry, 0);
  }

  bottom(): void {
    this.move(Number.MAX_SAFE_INTEGER);
  }

  /** The pane shows the selected post until the user moves, whatever arrives meanwhile. */
  toggleDetail(): void {
    this.detailOpen = !this.detailOpen;
    if (this.detailOpen) {
      const entry = this.selected();
      if (entry !== undefined) {
        this.#stayOn(entry.id);
        this.#seen(entry);
      }
      // Closed at the top, the selection follows the newest post again.
    } else if (this.selectedIndex() === 0) this.#selectedId = undefined;
    this.detailScroll = 0;
    this.#changed();
  }

  /** Where the frame just drawn put the list and the detail pane. No redraw: the frame shows it. */
  place(placed: Placement): void {
    this.list = placed.list;
    this.detailScroll = placed.detailScroll;
  }

  scrollDetail(delta: number): void {
    this.detailScroll = Math.max(0, this.detailScroll + delta);
    this.#changed();
  }

  togglePause(): void {
    if (this.paused) {
      this.paused = false;
      // Not moved while paused: the selection follows the newest again, as it did before.
      if (this.#pausedOn !== undefined && this.#pausedOn === this.#selectedId && !this.detailOpen)
        this.#selectedId = undefined;
    } else {
      this.paused = true;
      this.#pauseSeq = this.#seq;
      // The row under the cursor stays where it is while paused.
      this.#pausedOn = undefined;
      if (this.#selectedId === undefined) {
        this.#stayOn(this.firstRows(1)[0]?.id);
        this.#pausedOn = this.#selectedId;
      }
    }
    this.#rowsChanged();
  }

  /** Sets the search (`compilePattern`); a pattern that is not a regular expression keeps the last good one and says why. */
  setSearch(text: string): void {
    this.#searchText = text;
    const search = this.#search;
    this.searchError = undefined;
    this.message = undefined;
    if (text === '') {
      this.#search = undefined;
      this.#searchPattern = '';
    } else {
      try {
        if (search === undefined || text !== this.#searchPattern) this.#search = compilePattern(text);
        this.#searchPattern = text;
      } catch (error) {
        this.searchError = patternError(error);
      }
    }
    // The same pattern (an unfinished one kept the last) shows the same rows: none is tried again.
    if (this.#search === search) this.#changed();
    else this.#rowsChanged();
  }

  clearSearch(): void {
    this.setSearch('');
  }

  /** `n`/`N`: the next or previous match. The list shows only matches, so that is the next row. */
  nextMatch(direction: 1 | -1): void {
    const target = this.selectedIndex() + direction;
    // Only a step round the end (past the last, before the first) needs every row.
    let rows = this.firstRows(Math.max(1, target + 1));
    if (rows.length === 0) return;
    let index = target;
    if (target < 0) {
      rows = this.rows();
      index = rows.length - 1;
    } else if (target >= rows.length) index = 0;
    this.#select(rows[index]!, index);
  }

  toggleMute(streamId: string): void {
    if (this.#muted.has(streamId)) this.#muted.delete(streamId);
    else this.#muted.add(streamId);
    this.#unsaved = true;
    this.#rowsChanged();
  }

  toggleSolo(streamId: string): void {
    this.#solo = this.#solo === streamId ? undefined : streamId;
    this.#unsaved = true;
    this.#rowsChanged();
  }

  /** `M`: mutes the selected post's source (or unmutes one, from the streams list). */
  toggleSourceMute(source: string | undefined = this.selected()?.source): void {
    if (source === undefined) return this.say('this post names no source');
    if (this.#mutedSources.delete(source)) this.say(`source ${source} shown again`);
    else {
      this.#mutedSources.add(source);
      this.say(`source ${source} muted (f lists it: m shows it again)`);
    }
    this.#unsaved = true;
    this.#rowsChanged();
  }

  /** `t`: only the selected post's first coin; again, every post. */
  toggleCoin(): void {
    if (this.#coin !== undefined) this.#coin = undefined;
    else {
      const coin = this.selected()?.coins[0];
      if (coin === undefined) return this.say('this post names no coin');
      this.#coin = coin;
    }
    this.#rowsChanged();
  }

  togglePin(): void {
    const entry = this.selected();
    if (entry === undefined) return;
    if (!this.#unpin(entry.id) && this.#pin(entry))
      this.message = `pinned; the oldest pin was let go (--max-pins ${this.maxPins})`;
    this.#changed();
  }

  isPinned(id: string): boolean {
    return this.#pins.has(id);
  }

  toggleColumns(): void {
    this.columns = !this.columns;
    this.#changed();
  }

  /** Marks a moment passing (countdowns, the clock): the view redraws what depends on time. */
  tick(): void {
    this.#agesAt = this.now();
    this.#changed();
  }

  /**
   * The time the rows' ages are told at: the start, then each tick. Between ticks a frame
   * (a key's) leaves every age as it was, so it writes only the rows the key changed; were
   * ages told at each frame's own time, rows of posts that came at different moments would
   * each change at their own second, and almost every key would write most of the screen.
   */
  get agesAt(): number {
    return this.#agesAt;
  }

  /** Whether anything on screen depends on the clock beyond the header. */
  hasHidden(): boolean {
    return this.#entries.some((entry) => entry.text === null);
  }
}
