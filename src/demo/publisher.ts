import { connect, type StreamPostsClient, StreamPostsError } from '../index.js';
import { type Endpoint, commandFailure, DEFAULT_TIMEOUT_MS, publishOptionsOf } from '../api/internal.js';
import { parsePublishArgs } from '../protocol/commands.js';
import type { Seed } from '../protocol/seed.js';

/** A sample post of the demo; `releaseInMs` makes it hidden for that long. */
export interface SamplePost {
  streamId: string;
  contentType: 'rawtext' | 'markdown';
  content: string;
  customTarget?: string;
  releaseInMs?: number;
}

/** A newsroom's worth of variety: markdown with lists, links and cashtags, rawtext, a timed release, custom targets. */
export const SAMPLE_POSTS: readonly SamplePost[] = [
  {
    streamId: 'crypto-legal',
    contentType: 'markdown',
    content:
      '**SEC v. Ripple**: joint motion to dismiss the remaining appeals filed.\n\n- both sides bear their own costs\n- $XRP ruling from 2023 stands\n\n[Docket](https://example.org/dockets/sec-ripple)',
  },
  {
    streamId: 'macro-wire',
    contentType: 'rawtext',
    content: 'FED HOLDS RATES AT 4.25-4.50%, AS EXPECTED; DOT PLOT STILL SHOWS TWO CUTS THIS YEAR',
  },
  {
    streamId: 'whale-alerts',
    contentType: 'rawtext',
    customTarget: 'BTC',
    content: '2,500 $BTC (about $240M) moved from an unknown wallet to Coinbase',
  },
  {
    streamId: 'crypto-legal',
    contentType: 'rawtext',
    releaseInMs: 4_000,
    content: 'EMBARGOED: court approves the $ETH staking settlement; details at https://example.org/settlement',
  },
  {
    streamId: 'macro-wire',
    contentType: 'markdown',
    content:
      '## Payrolls beat\n\n| | actual | expected |\n|---|---|---|\n| NFP | 275k | 200k |\n| unemployment | 3.9% | 3.7% |\n\nRisk assets bid: $BTC $SOL up 2% on the print.',
  },
  {
    streamId: 'whale-alerts',
    contentType: 'rawtext',
    customTarget: 'SOL',
    content: '1,000,000 $SOL unstaked by one address (shown to readers who selected SOL)',
  },
  {
    streamId: 'whale-alerts',
    contentType: 'markdown',
    customTarget: 'ETH',
    content:
      '*Whale watch*: 40,000 **$ETH** withdrawn from Binance in the last hour — [on-chain](https://example.org/eth-flows)',
  },
  {
    streamId: 'crypto-legal',
    contentType: 'markdown',
    content: '> "The token is not a security in secondary sales."\n\nJudge Torres, in a one-page order. $XRP $SOL',
  },
];

export interface DemoPublisherOptions {
  endpoint: Endpoint;
  seed: Seed;
  intervalMs: number;
  /** Stop after this many posts; unlimited by default. */
  count?: number | undefined;
  onPublished?(sample: SamplePost, id: string): void;
  onError?(message: string): void;
}

/**
 * Publishes the samples in a loop through the library's client, as a user's bot
 * would: one connection per stream with that stream's key. Resolves once `count` posts are acknowledged
 * or `stop()` is called, with the time the last hidden post is released.
 */
export class DemoPublisher {
  #stopped = false;
  #wake: (() => void) | undefined;
  readonly #clients = new Map<string, Promise<StreamPostsClient>>();

  constructor(private readonly options: DemoPublisherOptions) {}

  async run(): Promise<{ published: number; lastReleaseAt: number }> {
    let published = 0;
    let lastReleaseAt = 0;
    for (
      let index = 0;
      !this.#stopped && (this.options.count === undefined || published < this.options.count);
      index++
    ) {
      const sample = SAMPLE_POSTS[index % SAMPLE_POSTS.length]!;
      const now = Date.now();
      const args = parsePublishArgs({
        streamId: sample.streamId,
        content: sample.content,
        contentType: sample.contentType,
        ...(sample.customTarget !== undefined ? { customTarget: sample.customTarget } : {}),
        ...(sample.releaseInMs !== undefined ? { releaseAt: new Date(now + sample.releaseInMs).toISOString() } : {}),
      });
      // A refusal is reported and the demo goes on; a failure of the connection ends it.
      const client = await this.#clientFor(sample.streamId);
      const answer = await client.publishOrRefusal(publishOptionsOf(args)).catch((error: unknown) => {
        throw commandFailure(
          error,
          DEFAULT_TIMEOUT_MS,
          `ack (the reply to add-stream-post) from ${this.options.endpoint.wsUrl}`,
        );
      });
      if (answer instanceof StreamPostsError) this.options.onError?.(`${answer.code}: ${answer.message}`);
      else {
        published += 1;
        if (sample.releaseInMs !== undefined) lastReleaseAt = now + sample.releaseInMs;
        this.options.onPublished?.(sample, answer.post.id);
      }
      if (this.options.count !== undefined && published >= this.options.count) break;
      await this.#sleep(this.options.intervalMs);
    }
    await Promise.all([...this.#clients.values()].map(async (client) => (await client).close()));
    return { published, lastReleaseAt };
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  #clientFor(streamId: string): Promise<StreamPostsClient> {
    let client = this.#clients.get(streamId);
    if (!client) {
      const stream = this.options.seed.streams.find((candidate) => candidate.id === streamId);
      if (!stream) throw new Error(`the demo seed has no stream ${streamId}`);
      client = connect({ url: this.options.endpoint.wsUrl, apiKey: stream.key, timeoutMs: DEFAULT_TIMEOUT_MS });
      this.#clients.set(streamId, client);
    }
    return client;
  }

  #sleep(ms: number): Promise<void> {
    // A stop() that came while a post was in flight found nothing to wake.
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
