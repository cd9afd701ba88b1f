import type { Post } from '../protocol/types.js';
import type { Endpoint } from './endpoint.js';
import { fetchStream } from './rest-streams.js';

/** The longest a post waits for its stream's name before it is shown under the id. */
const LOOKUP_TIMEOUT_MS = 5_000;

/**
 * Stream names for posts that came without one (the hosted service sends no
 * `streamName`; the tolerant reader puts the id there): each stream is looked up once,
 * through `GET /v1/streams/{id}`, and remembered, a failure as the id.
 */
export class StreamNames {
  readonly #names = new Map<string, Promise<string | undefined>>();
  readonly #timeoutMs: number;

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
      name = fetchStream(this.endpoints, this.apiKey, streamId, this.#timeoutMs).then(
        (stream) => (stream.name === '' ? undefined : stream.name),
        () => undefined,
      );
      this.#names.set(streamId, name);
    }
    return name;
  }

  /** The post with its stream's name when it came without one; as it came otherwise. */
  async named(post: Post): Promise<Post> {
    if (post.streamName !== post.streamId && post.streamName !== '') return post;
    const name = await this.of(post.streamId);
    return name === undefined ? post : { ...post, streamName: name };
  }
}
