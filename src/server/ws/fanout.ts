import { encodeEvent } from '../../protocol/events.js';
import { toTreeItem } from '../../protocol/tree.js';
import type {
  Delivery,
  Format,
  HiddenPosts,
  SubscriptionHolder,
  SubscriptionService,
} from '../service/subscriptions.js';
import { canSee, postFor } from '../service/visibility.js';
import type { PostRecord, StoreEvent, StreamRecord, UserRecord } from '../stores/store.js';

export type { Format, HiddenPosts };

/** The side of a connection that fan-out writes to. */
export interface Subscriber {
  /** Fan-out sequence number of the last post sent in each format, to send a post once per format. */
  envelopeStamp: number;
  treeStamp: number;
  sendFrame(frame: Buffer): void;
  /** Posts to send, in order, as the peer reads them: the subscriber asks `queuedFrame` for each frame when its turn comes. */
  sendQueued(posts: QueuedPost[]): void;
}

/** A connection's side of its subscriptions: the service's holder, and what the fan-out writes to. */
export type Holder = SubscriptionHolder<Subscription> & Subscriber;

/** The subscription service (service/subscriptions.ts) over this fan-out. */
export type Subscriptions = SubscriptionService<Subscription, Holder>;

/**
 * A post waiting to be written to one subscriber (history, mostly): a reference to the
 * stored post, not its encoded frame, so a long history waiting on a slow reader costs
 * the server almost nothing. `hidden` is the state the post was queued in.
 */
export class QueuedPost {
  readonly hidden: boolean;

  constructor(
    readonly type: StoreEvent['type'],
    readonly post: PostRecord,
    readonly format: Format,
  ) {
    this.hidden = post.hidden;
  }
}

interface PendingEvent {
  type: StoreEvent['type'];
  post: PostRecord;
}

/** Up to this many streams a subscription finds a post's stream by a scan, without a map of its own. */
const SCANNED_STREAMS = 8;

/** One subscribe command's standing interest in a set of streams. */
export class Subscription {
  /** Posts that arrived while history was being read; null once live. */
  pending: PendingEvent[] | null = [];
  /**
   * An array of its own length: the one a subscribe resolves is grown by pushes, and kept as
   * it is, a one-stream subscription held room for 17 (152 bytes of its elements, not 24).
   */
  readonly streams: readonly StreamRecord[];
  readonly #streamById: ReadonlyMap<string, StreamRecord> | undefined;

  constructor(
    readonly subscriber: Subscriber,
    readonly format: Format,
    readonly user: UserRecord,
    streams: readonly StreamRecord[],
    readonly hiddenPosts: HiddenPosts = 'push',
  ) {
    this.streams = streams.slice();
    // Most subscriptions name one stream or a few: a map each would be most of their memory.
    if (streams.length > SCANNED_STREAMS) this.#streamById = new Map(streams.map((stream) => [stream.id, stream]));
  }

  sees(post: PostRecord): boolean {
    const stream = this.#streamById ? this.#streamById.get(post.streamId) : scan(this.streams, post.streamId);
    return stream !== undefined && canSee(this.user, stream, post);
  }
}

/** A module function, not a private method: a class with one gives each instance a field to check it by. */
function scan(streams: readonly StreamRecord[], streamId: string): StreamRecord | undefined {
  for (const stream of streams) if (stream.id === streamId) return stream;
  return undefined;
}

interface FrameCache {
  hidden: boolean;
  created?: Buffer;
  released?: Buffer;
  tree?: Buffer;
}

interface StreamEntry {
  /** Only a custom stream's posts are filtered per subscriber (by custom target). */
  custom: boolean;
  subscriptions: Set<Subscription>;
}

/**
 * Delivers posts to subscriptions. Subscriptions are indexed by stream, so a
 * post costs O(its subscribers); each post is serialized once per format and
 * the same Buffer is written to every socket.
 */
export class FanOut implements Delivery<Subscription, Holder> {
  readonly #byStream = new Map<string, StreamEntry>();
  readonly #frames = new WeakMap<PostRecord, FrameCache>();
  #size = 0;
  #seq = 0;

  get size(): number {
    return this.#size;
  }

  /** Subscriptions covering a stream. */
  subscribersOf(streamId: string): number {
    return this.#byStream.get(streamId)?.subscriptions.size ?? 0;
  }

  subscription(
    holder: Holder,
    format: Format,
    user: UserRecord,
    streams: StreamRecord[],
    hiddenPosts: HiddenPosts,
  ): Subscription {
    return new Subscription(holder, format, user, streams, hiddenPosts);
  }

  add(subscription: Subscription): void {
    for (const stream of subscription.streams) {
      let entry = this.#byStream.get(stream.id);
      if (!entry) {
        entry = { custom: stream.custom, subscriptions: new Set() };
        this.#byStream.set(stream.id, entry);
      }
      entry.subscriptions.add(subscription);
    }
    this.#size += 1;
  }

  remove(subscription: Subscription): void {
    for (const stream of subscription.streams) {
      const entry = this.#byStream.get(stream.id);
      if (!entry?.subscriptions.delete(subscription)) continue;
      if (entry.subscriptions.size === 0) this.#byStream.delete(stream.id);
    }
    this.#size -= 1;
  }

  /**
   * The serialized frame of a post event in a format, built once per post state and kept
   * while the post is: history replays send the same posts to subscriber after subscriber.
   */
  frame(type: StoreEvent['type'], post: PostRecord, format: Format): Buffer {
    let cache = this.#frames.get(post);
    if (!cache || cache.hidden !== post.hidden) {
      cache = { hidden: post.hidden };
      this.#frames.set(post, cache);
    }
    if (format === 'tree') return (cache.tree ??= ownBuffer(encodeFrame(type, post, format)));
    if (type === 'released') return (cache.released ??= ownBuffer(encodeFrame(type, post, format)));
    return (cache.created ??= ownBuffer(encodeFrame(type, post, format)));
  }

  dispatch(event: StoreEvent): void {
    const entry = this.#byStream.get(event.post.streamId);
    if (!entry) return;
    const seq = ++this.#seq;
    const { post, type } = event;
    // Resolved once per event, not per subscriber: the loop below runs 1,000s of times. Not
    // cached: keeping every live post's frame until its post leaves the history made the
    // heap grow by megabytes a second under load, and the full collections that followed
    // delayed deliveries by tens of milliseconds.
    let envelope: Buffer | undefined;
    let tree: Buffer | undefined;
    // The hosted dialect's view of the same event: nothing while hidden, a new post at release.
    const heldBack = type === 'created' && post.hidden;
    let releasedAsCreated: Buffer | undefined;
    for (const subscription of entry.subscriptions) {
      if (entry.custom && !subscription.sees(post)) continue;
      const { subscriber, format } = subscription;
      const atRelease = subscription.hiddenPosts === 'at-release';
      if (atRelease && heldBack) continue;
      if (format === 'tree') {
        if (subscriber.treeStamp === seq) continue;
        subscriber.treeStamp = seq;
      } else {
        if (subscriber.envelopeStamp === seq) continue;
        subscriber.envelopeStamp = seq;
      }
      if (subscription.pending) {
        subscription.pending.push(event);
        continue;
      }
      const frame =
        format === 'tree'
          ? (tree ??= Buffer.from(encodeFrame(type, post, format)))
          : atRelease && type === 'released'
            ? (releasedAsCreated ??= Buffer.from(encodeFrame('created', post, format)))
            : (envelope ??= Buffer.from(encodeFrame(type, post, format)));
      subscriber.sendFrame(frame);
    }
  }

  /**
   * Queues history, then whatever arrived while it was read, and turns the
   * subscription live. Events about posts the history already shows (in their
   * current state) are not sent again.
   */
  goLive(subscription: Subscription, history: readonly PostRecord[]): void {
    const { subscriber, format, pending } = subscription;
    const atRelease = subscription.hiddenPosts === 'at-release';
    const queued = history.map((post) => new QueuedPost('created', post, format));
    if (pending && pending.length > 0) {
      const shown = new Map(history.map((post) => [post.id, post]));
      for (const event of pending) {
        const { post } = event;
        const seen = shown.get(post.id);
        // A store that reads history as a copy may have read the post before its release.
        if (seen && !(event.type === 'released' && seen.hidden)) continue;
        if (!atRelease) queued.push(new QueuedPost(event.type, post, format));
        // Once, when its text is there: a post released meanwhile has both events pending.
        else if (!post.hidden || event.type === 'released') {
          queued.push(new QueuedPost('created', post, format));
          shown.set(post.id, post);
        }
      }
    }
    subscription.pending = null;
    if (queued.length === 0) return;
    subscriber.sendQueued(queued);
  }

  /** The frame of a queued post, in the state it was queued in (it may have been released since). */
  queuedFrame(queued: QueuedPost): Buffer {
    const { type, post, format } = queued;
    if (post.hidden === queued.hidden) return this.frame(type, post, format);
    return Buffer.from(encodeFrame(type, { ...post, hidden: queued.hidden }, format));
  }
}

/**
 * One frame per post state for every subscriber, the owner's included: a pushed hidden post
 * is what anyone may see of it (the owner reads it whole in its ack and over REST).
 */
function encodeFrame(type: StoreEvent['type'], record: PostRecord, format: Format): string {
  const post = postFor(record, 'anyone');
  if (format === 'tree') return JSON.stringify(toTreeItem(post));
  return encodeEvent(type === 'released' ? 'stream.post.released' : 'stream.post.created', post);
}

/**
 * A frame in a buffer of its own. `Buffer.from` packs small buffers into shared 8 KiB
 * slabs, and one frame still cached (a post in its stream's recent history) would pin its
 * whole slab: after 100,000 releases that kept about 8x the memory the posts need.
 */
function ownBuffer(text: string): Buffer {
  const buffer = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  buffer.write(text);
  return buffer;
}
