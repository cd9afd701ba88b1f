import type { Post } from '../protocol/types.js';
import { firstMatch, type AlertRule } from './alerts.js';
import { entryOf, type Entry } from './entry.js';
import type { AlertEffect, ConnectionView, ModelOptions, StreamInfo } from './model-types.js';

export type { AlertEffect, ConnectionView, ModelOptions, StreamInfo };

/**
 * The terminal's state without the screen: the buffer, the filters, the search, the
 * selection, pause and pins, the alert rules' effects. The view reads it; keys and
 * posts change it; nothing here draws or does I/O, so tests drive it directly.
 */
export class TerminalModel {
  readonly capacity: number;
  readonly rules: readonly AlertRule[];
  readonly alertCounts: number[];
  readonly now: () => number;
  connection: ConnectionView = { kind: 'connecting', attempt: 0 };
  /** The service's clock minus ours, when it said. */
  clockOffsetMs: number | undefined;
  paused = false;
  detailOpen = false;
  columns = false;
  /** Lines the detail pane is scrolled down. */
  detailScroll = 0;
  /** One line of news for the footer (an opener that failed, a copied link…). */
  message: string | undefined;
  /** Posts hidden by a `mute` rule: counted, never shown. */
  mutedByRule = 0;
  /** Bumped on every change: the view's caches key on it. */
  version = 0;

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
  readonly #pins: string[] = [];
  readonly #alerted = new Map<string, number>();
  readonly #ruleMuted = new Set<string>();
  #selectedId: string | undefined;
  /** The service's time last told (`connected.serverTime`). */
  #serviceTime: string | undefined;
  #rowsVersion = 0;
  /**
   * `rows()` as far as worked out: `next` is the index in `#entries` of the next post to try
   * (newest first), -1 once every post was tried. A search key finds only the rows a frame
   * shows; the rest are found when asked for (`rows()`, `finishRows()`).
   */
  #rowsCache: { version: number; rows: Entry[]; next: number } | undefined;
  /**
   * Posts that came, and went, since `rows()` was last worked out whole, the filters unchanged:
   * the next `rows()` puts the new ones on top and takes the gone ones off the bottom
   * instead of trying every post again (a key pressed while posts arrive waits for that).
   */
  #added: Entry[] = [];
  #dropped = new Set<Entry>();
  /** Bumped when a post comes or goes, or a stream is named: what `streams()` counts. */
  #streamsVersion = 0;
  #streamsCache: { version: number; streams: readonly StreamInfo[] } | undefined;

  constructor(options: ModelOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${options.capacity}`);
    this.capacity = options.capacity;
    this.rules = options.rules ?? [];
    this.alertCounts = this.rules.map(() => 0);
    this.#match = options.match === undefined ? undefined : new RegExp(options.match.source, 'iu');
    this.now = options.now ?? Date.now;
  }

  #changed(): void {
    this.version += 1;
  }

  /** A change of what `rows()` holds (posts, filters, pause), not only of how it looks. */
  #rowsChanged(): void {
    this.#rowsVersion += 1;
    this.version += 1;
    this.#added = [];
    this.#dropped.clear();
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

  get searching(): boolean {
    return this.#search !== undefined;
  }

  get solo(): string | undefined {
    return this.#solo;
  }

  isMuted(streamId: string): boolean {
    return this.#muted.has(streamId);
  }

  get filtered(): boolean {
    return this.#search !== undefined || this.#solo !== undefined || this.#muted.size > 0;
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

  knowStream(id: string, name?: string): void {
    if (name !== undefined || !this.#streams.has(id)) this.#streams.set(id, name ?? this.#streams.get(id) ?? id);
    this.#streamsVersion += 1;
    this.#changed();
  }

  setConnection(connection: ConnectionView): void {
    this.connection = connection;
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

  say(message: string | undefined): void {
    this.message = message;
    this.#changed();
  }

  /**
   * A post delivered (new, or the release of one already shown: then the same row turns
   * visible). Returns what its alert rule asks the terminal to do.
   */
  add(post: Post, history: boolean): AlertEffect[] {
    const previous = this.#byId.get(post.id);
    // A second delivery of a post already shown with its text changes nothing: never shown twice.
    if (previous !== undefined && (previous.text !== null || post.text === null)) return [];
    if (previous === undefined && post.text !== null && this.#match && !this.#match.test(post.text)) return [];
    const entry = entryOf(post, history, ++this.#seq, previous, this.now());
    this.#streams.set(entry.streamId, entry.streamName);
    this.#streamsVersion += 1;
    this.#byId.set(entry.id, entry);
    if (previous === undefined) {
      this.#entries.push(entry);
      this.#counts.set(entry.streamId, (this.#counts.get(entry.streamId) ?? 0) + 1);
      const dropped = this.#trim();
      if (this.#rowsComplete() && this.#added.length < this.capacity) {
        this.#added.push(entry);
        for (const gone of dropped) this.#dropped.add(gone);
        this.#changed();
      } else this.#rowsChanged();
    } else {
      const at = this.#entries.lastIndexOf(previous);
      if (at !== -1) this.#entries[at] = entry;
      this.#rowsChanged();
    }
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
      this.#alerted.delete(gone.id);
      this.#ruleMuted.delete(gone.id);
      const pinned = this.#pins.indexOf(gone.id);
      if (pinned !== -1) this.#pins.splice(pinned, 1);
    }
    return dropped;
  }

  #alert(entry: Entry, post: Post, history: boolean): AlertEffect[] {
    if (this.rules.length === 0 || this.#alerted.has(entry.id)) return [];
    const index = firstMatch(this.rules, entry);
    if (index === undefined) return [];
    const rule = this.rules[index]!;
    this.#alerted.set(entry.id, index);
    this.alertCounts[index] = (this.alertCounts[index] ?? 0) + 1;
    switch (rule.action) {
      case 'mute':
        this.#ruleMuted.add(entry.id);
        this.mutedByRule += 1;
        return [];
      case 'pin':
        if (!this.#pins.includes(entry.id)) this.#pins.unshift(entry.id);
        return [];
      case 'highlight':
        return [];
      default:
        // The past is not news: history is marked, but rings nothing and runs nothing.
        return history ? [] : [{ action: rule.action, rule, entry, post }];
    }
  }

  /** The rule that matched a post, if any. */
  alertOf(id: string): AlertRule | undefined {
    const index = this.#alerted.get(id);
    return index === undefined ? undefined : this.rules[index];
  }

  entry(id: string): Entry | undefined {
    return this.#byId.get(id);
  }

  pinned(): Entry[] {
    return this.#pins.map((id) => this.#byId.get(id)).filter((entry): entry is Entry => entry !== undefined);
  }

  #shown(entry: Entry): boolean {
    // Tried for every post held on a search key: the empty sets are not asked.
    if (this.#ruleMuted.size > 0 && this.#ruleMuted.has(entry.id)) return false;
    if (this.#solo !== undefined) {
      if (entry.streamId !== this.#solo) return false;
    } else if (this.#muted.size > 0 && this.#muted.has(entry.streamId)) return false;
    if (this.paused && entry.seq > this.#pauseSeq) return false;
    if (this.#search !== undefined) {
      if (entry.text === null) return false;
      if (!this.#search.test(entry.searched)) return false;
    }
    return true;
  }

  /** Whether `rows()` is worked out whole for the filters and posts as they are. */
  #rowsComplete(): boolean {
    const cached = this.#rowsCache;
    return cached !== undefined && cached.version === this.#rowsVersion && cached.next === -1;
  }

  /**
   * The rows worked out so far, newest first, trying older posts until `enough` says so or
   * every post was tried. Posts that came and went since are applied to a whole list.
   */
  #scan(enough: (rows: readonly Entry[]) => boolean): Entry[] {
    let cached = this.#rowsCache;
    if (cached?.version !== this.#rowsVersion) {
      cached = { version: this.#rowsVersion, rows: [], next: this.#newestShowable() };
      this.#rowsCache = cached;
      this.#added = [];
      this.#dropped.clear();
    } else if (this.#added.length > 0 || this.#dropped.size > 0) {
      // Only a whole list takes them (`add`): the gone are the oldest, at the bottom, where shown.
      let end = cached.rows.length;
      while (end > 0 && this.#dropped.has(cached.rows[end - 1]!)) end -= 1;
      const rows: Entry[] = [];
      for (let index = this.#added.length - 1; index >= 0; index--) {
        const entry = this.#added[index]!;
        if (!this.#dropped.has(entry) && this.#shown(entry)) rows.push(entry);
      }
      cached.rows = rows.concat(cached.rows.slice(0, end));
      this.#added = [];
      this.#dropped.clear();
    }
    const { rows } = cached;
    let next = cached.next;
    while (next >= 0 && !enough(rows)) {
      const entry = this.#entries[next]!;
      next -= 1;
      if (this.#shown(entry)) rows.push(entry);
    }
    cached.next = next;
    return rows;
  }

  /**
   * The index in `#entries` of the newest post the pause lets show: posts are held in arrival
   * order, so those that came after the pause (thousands, in a long pause) are not tried one by one.
   */
  #newestShowable(): number {
    const entries = this.#entries;
    if (!this.paused || entries.length === 0 || entries[entries.length - 1]!.seq <= this.#pauseSeq)
      return entries.length - 1;
    let low = -1;
    let high = entries.length - 1;
    // entries[low] came before the pause or low is -1; entries[high] came after it.
    while (high - low > 1) {
      const middle = (low + high) >> 1;
      if (entries[middle]!.seq <= this.#pauseSeq) low = middle;
      else high = middle;
    }
    return low;
  }

  /** The feed as shown, newest first: filters, search, pause and pins applied. */
  rows(): readonly Entry[] {
    return this.#scan(() => false);
  }

  /**
   * At least the first `count` rows (all of them when fewer are shown): what a frame of the
   * list needs. After a search key this tries only as many posts as it takes to fill them.
   */
  firstRows(count: number): readonly Entry[] {
    return this.#scan((rows) => rows.length >= count);
  }

  /** How many rows are shown, or undefined while `rows()` is not worked out whole. */
  rowCount(): number | undefined {
    if (!this.#rowsComplete()) return undefined;
    // Posts that came since are counted in (`#scan` takes them without trying any other).
    return this.#scan(() => true).length;
  }

  /**
   * Works out the rows not yet tried (the count a search shows): false when there were
   * none. The terminal does it just after a frame drawn from the first rows only.
   */
  finishRows(): boolean {
    if (this.#rowsComplete()) return false;
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
    const at = this.#scan(() => true).indexOf(entry);
    if (at !== -1) return at;
    const rows = this.#scan((found) => found[found.length - 1] === entry);
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

  /** Moves the selection by `delta` rows (clamped); the top row follows the newest post. */
  move(delta: number): void {
    const [entry, index] = this.#rowAt(this.selectedIndex() + delta);
    if (entry === undefined) return;
    this.#selectedId = index === 0 ? undefined : entry.id;
    this.detailScroll = 0;
    this.#changed();
  }

  top(): void {
    this.#selectedId = undefined;
    this.detailScroll = 0;
    this.#changed();
  }

  bottom(): void {
    this.move(Number.MAX_SAFE_INTEGER);
  }

  toggleDetail(): void {
    this.detailOpen = !this.detailOpen;
    this.detailScroll = 0;
    this.#changed();
  }

  scrollDetail(delta: number): void {
    this.detailScroll = Math.max(0, this.detailScroll + delta);
    this.#changed();
  }

  togglePause(): void {
    if (this.paused) {
      this.paused = false;
    } else {
      this.paused = true;
      this.#pauseSeq = this.#seq;
      // The row under the cursor stays where it is while paused.
      this.#selectedId ??= this.firstRows(1)[0]?.id;
    }
    this.#rowsChanged();
  }

  /** Sets the search (case-insensitive); an unfinished pattern keeps the last good one and says so. */
  setSearch(text: string): void {
    this.#searchText = text;
    const search = this.#search;
    if (text === '') {
      this.#search = undefined;
      this.message = undefined;
    } else {
      try {
        if (search === undefined || text !== this.#searchPattern) this.#search = new RegExp(text, 'iu');
        this.#searchPattern = text;
        this.message = undefined;
      } catch {
        this.message = `not a regular expression yet: ${text}`;
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
    this.#selectedId = index === 0 ? undefined : rows[index]!.id;
    this.detailScroll = 0;
    this.#changed();
  }

  toggleMute(streamId: string): void {
    if (this.#muted.has(streamId)) this.#muted.delete(streamId);
    else this.#muted.add(streamId);
    this.#rowsChanged();
  }

  toggleSolo(streamId: string): void {
    this.#solo = this.#solo === streamId ? undefined : streamId;
    this.#rowsChanged();
  }

  togglePin(): void {
    const entry = this.selected();
    if (entry === undefined) return;
    const at = this.#pins.indexOf(entry.id);
    if (at === -1) this.#pins.unshift(entry.id);
    else this.#pins.splice(at, 1);
    this.#changed();
  }

  isPinned(id: string): boolean {
    return this.#pins.includes(id);
  }

  toggleColumns(): void {
    this.columns = !this.columns;
    this.#changed();
  }

  /** Marks a moment passing (countdowns, the clock): the view redraws what depends on time. */
  tick(): void {
    this.#changed();
  }

  /** Whether anything on screen depends on the clock beyond the header. */
  hasHidden(): boolean {
    return this.#entries.some((entry) => entry.text === null);
  }
}
