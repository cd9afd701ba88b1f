import type { ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import { postFor, type Reader } from '../service/visibility.js';
import type { PostLog, StoreEvent } from '../stores/store.js';

/** What the dashboard's feed says besides posts: the clock moved, state was reset, connections changed. */
export type DashboardNotice = 'clock' | 'reset' | 'connections' | 'faults';

/** Posts per stream the feed starts with. */
const SNAPSHOT_PER_STREAM = 100;
/** A comment line this often keeps proxies from closing an idle feed and shows a dead one. */
const HEARTBEAT_MS = 15_000;
/** A dashboard this far behind is dropped (it reconnects and starts from a fresh snapshot). */
const MAX_BACKLOG_BYTES = 4 * 1024 * 1024;
/** Connection changes within this long are told once: 10,000 clients connecting are not 10,000 messages. */
const CONNECTIONS_COALESCE_MS = 200;

interface Listener {
  res: ServerResponse;
  /** Events that arrived while the snapshot was being read; null once live. */
  pending: string[] | null;
}

/**
 * `GET /_admin/events`: a server-sent event stream of every post as it is created and
 * released, clock moves, resets and connection changes. It starts with a `snapshot` of
 * recent posts. Behind the admin token it shows hidden posts whole (the admin reads as an
 * owner); without one anybody on the page's origin reads it, so hidden posts come withheld.
 */
export class DashboardEvents {
  readonly #listeners = new Set<Listener>();
  readonly #stopStore: () => void;
  readonly #heartbeat: NodeJS.Timeout;
  #connectionsTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly store: PostLog,
    readonly clock: Clock,
    readonly streamIds: readonly string[],
    readonly reader: Reader,
  ) {
    this.#stopStore = store.onEvent((event) => this.#onStoreEvent(event));
    this.#heartbeat = setInterval(() => this.#broadcast(': keep-alive\n\n'), HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  async open(res: ServerResponse): Promise<void> {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Proxies must not hold the stream back.
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    const listener: Listener = { res, pending: [] };
    this.#listeners.add(listener);
    res.on('close', () => this.#listeners.delete(listener));
    await this.#sendSnapshot(listener);
  }

  /**
   * Recent posts, then what arrived meanwhile. Listening first, then reading: a post
   * stored meanwhile is in both, and the page keeps one.
   */
  async #sendSnapshot(listener: Listener): Promise<void> {
    listener.pending ??= [];
    const recent = await Promise.all(this.streamIds.map((id) => this.store.recent(id, SNAPSHOT_PER_STREAM)));
    const posts = recent.flat().sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (!this.#listeners.has(listener)) return;
    const pending = listener.pending ?? [];
    listener.pending = null;
    this.#write(
      listener,
      message('snapshot', { posts: posts.map((post) => postFor(post, this.reader)), now: this.#now() }),
    );
    for (const text of pending) this.#write(listener, text);
  }

  notify(notice: DashboardNotice): void {
    if (this.#listeners.size === 0) return;
    if (notice === 'reset') {
      // Back to the seed: the seed's posts again, as a new snapshot.
      this.#broadcast(message('reset', { now: this.#now() }));
      for (const listener of this.#listeners) {
        this.#sendSnapshot(listener).catch(() => listener.res.destroy());
      }
      return;
    }
    if (notice === 'clock' || notice === 'faults') {
      this.#broadcast(message(notice, { now: this.#now() }));
      return;
    }
    this.#connectionsTimer ??= setTimeout(() => {
      this.#connectionsTimer = undefined;
      this.#broadcast(message('connections', { now: this.#now() }));
    }, CONNECTIONS_COALESCE_MS);
  }

  close(): void {
    clearInterval(this.#heartbeat);
    clearTimeout(this.#connectionsTimer);
    this.#stopStore();
    for (const listener of this.#listeners) listener.res.end();
    this.#listeners.clear();
  }

  #now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  #onStoreEvent(event: StoreEvent): void {
    if (this.#listeners.size === 0) return;
    this.#broadcast(message('post', { type: event.type, post: postFor(event.post, this.reader), now: this.#now() }));
  }

  #broadcast(text: string): void {
    for (const listener of this.#listeners) {
      if (listener.pending) listener.pending.push(text);
      else this.#write(listener, text);
    }
  }

  #write(listener: Listener, text: string): void {
    if (listener.res.writableLength > MAX_BACKLOG_BYTES) {
      this.#listeners.delete(listener);
      listener.res.destroy();
      return;
    }
    listener.res.write(text);
  }
}

function message(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
