import { serviceNow } from './clock.js';
import { formatDuration, h } from './dom.js';
import { renderMarkdown } from './markdown.js';

/** A post as the admin feed sends it: the wire form, a hidden post's text included behind the admin token only. */
export interface FeedPost {
  id: string;
  streamId: string;
  streamName: string;
  text: string | null;
  contentType: 'rawtext' | 'markdown';
  createdAt: string;
  releaseAt: string | null;
  hidden: boolean;
  customTarget: string | null;
}

/** Posts kept on the page; older ones leave it. */
const MAX_POSTS = 500;

/** The live feed: newest first, hidden posts with a countdown, releases marked when they happen. */
export class Feed {
  readonly #list: HTMLElement;
  readonly #empty: HTMLElement;
  readonly #items = new Map<string, { post: FeedPost; element: HTMLElement }>();
  #filter = '';

  constructor(list: HTMLElement, empty: HTMLElement) {
    this.#list = list;
    this.#empty = empty;
  }

  /** Replaces everything (a new or resumed feed starts with a snapshot). */
  replace(posts: readonly FeedPost[]): void {
    this.clear();
    for (const post of posts) this.add(post, 'created');
  }

  clear(): void {
    this.#items.clear();
    this.#list.replaceChildren();
    this.#updateEmpty();
  }

  add(post: FeedPost, type: 'created' | 'released'): void {
    const known = this.#items.get(post.id);
    if (known && type === 'created') return;
    const element = renderPost(post, type === 'released' && known !== undefined);
    if (known) known.element.replaceWith(element);
    else this.#list.prepend(element);
    this.#items.set(post.id, { post, element });
    element.hidden = this.#filter !== '' && post.streamId !== this.#filter;
    while (this.#items.size > MAX_POSTS) {
      const oldest = this.#items.keys().next().value as string;
      this.#items.get(oldest)?.element.remove();
      this.#items.delete(oldest);
    }
    this.#updateEmpty();
  }

  setFilter(streamId: string): void {
    this.#filter = streamId;
    for (const { post, element } of this.#items.values())
      element.hidden = streamId !== '' && post.streamId !== streamId;
    this.#updateEmpty();
  }

  /** Moves every countdown to the service's time. */
  tick(): void {
    const now = serviceNow();
    for (const element of this.#list.querySelectorAll<HTMLElement>('.countdown')) {
      const releaseAt = Date.parse(element.dataset['releaseAt'] ?? '');
      element.textContent = releaseAt > now ? `releases in ${formatDuration(releaseAt - now)}` : 'release due';
    }
  }

  #updateEmpty(): void {
    const shown = [...this.#items.values()].some(({ element }) => !element.hidden);
    this.#empty.hidden = shown;
  }
}

function renderPost(post: FeedPost, justReleased: boolean): HTMLElement {
  const state = post.hidden ? 'hidden' : justReleased ? 'released' : 'visible';
  const badges = h('span', { class: 'badges' });
  if (post.hidden && post.releaseAt !== null) {
    badges.append(
      h('span', { class: 'badge hidden-badge' }, 'hidden'),
      h('span', { class: 'countdown', 'data-release-at': post.releaseAt }, ''),
    );
  } else if (justReleased) {
    badges.append(h('span', { class: 'badge released-badge' }, `released ${timeOf(post.releaseAt ?? post.createdAt)}`));
  } else if (post.releaseAt !== null) {
    badges.append(h('span', { class: 'badge' }, `released ${timeOf(post.releaseAt)}`));
  }
  if (post.customTarget !== null) badges.append(h('span', { class: 'badge' }, `target ${post.customTarget}`));
  badges.append(h('span', { class: 'badge' }, post.contentType));
  const body =
    post.text === null
      ? h('p', { class: 'body muted' }, post.hidden ? '(withheld until its release)' : '(no text)')
      : post.contentType === 'markdown'
        ? h('div', { class: 'body markdown' }, renderMarkdown(post.text))
        : h('pre', { class: 'body rawtext' }, post.text);
  const element = h(
    'article',
    { class: `post ${state}`, 'data-post-id': post.id, 'data-stream-id': post.streamId, 'data-state': state },
    h(
      'header',
      {},
      h('strong', {}, post.streamName),
      h('span', { class: 'muted' }, ` ${post.streamId} · ${timeOf(post.createdAt)} · ${post.id}`),
      badges,
    ),
    body,
  );
  return element;
}

function timeOf(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? iso
    : date
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}
