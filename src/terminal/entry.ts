import type { Post } from '../protocol/types.js';
import { headlineOf, linksOf } from '../render/links.js';
import { safeLine, terminalSafe } from '../render/text.js';
import { coinsOf } from './coins.js';
/** Texts up to this long keep their search text once made: a search tries every post again on each key. */
const KEEP_SEARCHED = 2048;
const MAX_LINKS = 9;

function epochMs(iso: string | null): number | undefined {
  if (iso === null) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Columns a source's name takes at most: a row is for the headline. */
const MAX_SOURCE_CHARS = 24;

/**
 * Who the post says it is from, when it says (the REST publishers' `metadata.sourceName`, or
 * `source` or `author`): sanitized, on one line, cut short.
 */
function sourceOf(post: Post): string | undefined {
  const metadata = post.metadata;
  if (metadata === undefined || metadata === null) return undefined;
  for (const field of ['sourceName', 'source', 'author']) {
    const value = metadata[field];
    if (typeof value !== 'string') continue;
    // By code point: a cut never leaves half of a character.
    const source = [...safeLine(value.slice(0, 256))].slice(0, MAX_SOURCE_CHARS).join('').trim();
    if (source !== '') return source;
  }
  return undefined;
}

/**
 * One post as the terminal keeps it: every text already through the sanitizer; `previous` is
 * the same post as shown before (a release updates it in place). The headline, coins and links
 * are worked out when first shown: a burst of thousands of posts pays only for the rows that
 * reach the screen. A class, not
 * an object literal with getters: every entry has the same shape, so a search trying 5,000
 * of them on each key reads their fields at full speed.
 */
export class Entry {
  readonly id: string;
  readonly streamId: string;
  readonly streamName: string;
  /** The text (control characters removed), or null while it is hidden. */
  readonly text: string | null;
  readonly markdown: boolean;
  readonly createdMs: number;
  readonly releaseMs: number | undefined;
  /** Delivered by `--last`: the past, not news. */
  readonly history: boolean;
  /** When (epoch ms) this session saw the text turn visible: the row is marked for a moment. */
  readonly releasedAtMs: number | undefined;
  /** Arrival order in this session (a release is an arrival: it is news then): pausing freezes the list at one. */
  readonly seq: number;
  /** When (epoch ms, this machine's clock) the post, or its release, arrived here. */
  readonly arrivedMs: number;
  /** The post's author or source, when it names one (sanitized). */
  readonly source: string | undefined;
  readonly #customTarget: string | null;
  readonly #knownCoins: ReadonlySet<string>;
  #searched: string | undefined;
  #headline: string | undefined;
  #coins: readonly string[] | undefined;
  #links: readonly string[] | undefined;

  constructor(
    post: Post,
    history: boolean,
    seq: number,
    previous: Entry | undefined,
    nowMs: number,
    coins: ReadonlySet<string>,
  ) {
    const text = post.text === null ? null : terminalSafe(post.text);
    this.id = post.id;
    this.streamId = safeLine(post.streamId);
    this.streamName = safeLine(post.streamName) || this.streamId || '?';
    this.text = text;
    this.markdown = post.contentType === 'markdown';
    this.createdMs = epochMs(post.createdAt) ?? nowMs;
    this.releaseMs = epochMs(post.releaseAt);
    this.history = previous?.history ?? history;
    const released = previous !== undefined && previous.text === null && text !== null;
    this.releasedAtMs = released ? nowMs : previous?.releasedAtMs;
    this.seq = released ? seq : (previous?.seq ?? seq);
    this.arrivedMs = nowMs;
    this.source = text === null ? undefined : sourceOf(post);
    this.#customTarget = post.customTarget ?? null;
    this.#knownCoins = coins;
  }

  /** What a search is tried against: the stream's name, a line break, the text. */
  get searched(): string {
    if (this.#searched !== undefined) return this.#searched;
    // Kept, the join is made flat once (by the first search), not on every try of every key.
    const joined = `${this.streamName}\n${this.text ?? ''}`;
    if (joined.length <= KEEP_SEARCHED) this.#searched = joined;
    return joined;
  }

  /** The first line of the text, markdown marks taken out, on one line. */
  get headline(): string {
    return (this.#headline ??= this.text === null ? '' : headlineOf(this.text, this.markdown));
  }

  /** Its coins (see coinsOf): the custom target's, then the text's `$CASHTAG`s and known `#HASHTAG`s. */
  get coins(): readonly string[] {
    return (this.#coins ??= this.text === null ? [] : coinsOf(this.text, this.#customTarget, this.#knownCoins));
  }

  /** Web addresses in the text, in order, each once. */
  get links(): readonly string[] {
    return (this.#links ??= this.text === null ? [] : linksOf(this.text, this.markdown, MAX_LINKS));
  }
}
