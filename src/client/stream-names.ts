import type { Post } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';
import { fetchStream } from './rest-streams.js';

/** The longest a post waits for its stream's name before it is shown under the id. */
const LOOKUP_TIMEOUT_MS = 5_000;
/**
 * Lookups in flight at once: a subscription to 10,000 streams must not open 10,000
 * requests (and as many sockets) together.
 */
export const MAX_LOOKUPS = 8;

/**
 * Stream names for posts that came without one (the hosted service sends no
 * `streamName`; the tolerant reader puts the id there): each stream is looked up once,
 * through `GET /v1/streams/{id}`, and remembered, a failure as the id.
 */
export class StreamNames {
  readonly #names = new Map<string, Promise<string | undefined>>();
  readonly #timeoutMs: number;
  #running = 0;
  /** Lookups waiting for one in flight to end, by stream, in the order they go. */
  readonly #waiting: { streamId: string; start: () => void }[] = [];

  constructor(
    private readonly endpoints: readonly Endpoint[],
    private readonly apiKey: string,
    timeoutMs: number,
  ) {
    this.#timeoutMs = Math.min(timeoutMs, LOOKUP_TIMEOUT_MS);
  }

  /** A name learnt elsewhere (a list of streams): no lookup for that stream. */
  remember(streamId: string, name: string): void {
    this.#names.set(streamId, Promise.resolve(name));
  }

  /** The stream's name, or undefined when the lookup failed (it is not tried again). */
  of(streamId: string): Promise<string | undefined> {
    let name = this.#names.get(streamId);
    if (name === undefined) {
      name = this.#lookUp(streamId);
      this.#names.set(streamId, name);
    }
    return name;
  }

  async #lookUp(streamId: string): Promise<string | undefined> {
    // A lookup that ends hands its place to the next waiting, so none can start in between.
    if (this.#running < MAX_LOOKUPS) this.#running += 1;
    else await new Promise<void>((start) => this.#waiting.push({ streamId, start }));
    try {
      const stream = await fetchStream(this.endpoints, this.apiKey, streamId, this.#timeoutMs);
      return stream.name === '' ? undefined : stream.name;
    } catch {
      return undefined;
    } finally {
      const next = this.#waiting.shift();
      if (next === undefined) this.#running -= 1;
      else next.start();
    }
  }

  /** The post with its stream's name when it came without one; as it came otherwise. */
  async named(post: Post): Promise<Post> {
    if (post.streamName !== post.streamId && post.streamName !== '') return post;
    // A post waits for this name: its lookup goes before those of streams nothing waits for.
    const at = this.#waiting.findIndex((waiting) => waiting.streamId === post.streamId);
    if (at > 0) this.#waiting.unshift(...this.#waiting.splice(at, 1));
    const name = await this.of(post.streamId);
    return name === undefined ? post : { ...post, streamName: name };
  }
}
