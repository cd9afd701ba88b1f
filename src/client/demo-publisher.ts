import type { Seed } from '../server/seed.js';
import type { Endpoint } from './endpoint.js';
import { withIdempotencyKey } from './idempotency.js';
import { buildPublishArgs } from './validate-post.js';
import { Publisher } from './publisher.js';

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
    content: '## Payrolls beat\n\n| | actual | expected |\n|---|---|---|\n| NFP | 275k | 200k |\n| unemployment | 3.9% | 3.7% |\n\nRisk assets bid: $BTC $SOL up 2% on the print.',
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
    content: '*Whale watch*: 40,000 **$ETH** withdrawn from Binance in the last hour — [on-chain](https://example.org/eth-flows)',
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
 * Publishes the samples in a loop over the real protocol, one connection per
 * stream with that stream's key. Resolves once `count` posts are acknowledged
 * or `stop()` is called, with the time the last hidden post is released.
 */
export class DemoPublisher {
  #stopped = false;
  #wake: (() => void) | undefined;
  readonly #publishers = new Map<string, Publisher>();

  constructor(private readonly options: DemoPublisherOptions) {}

  async run(): Promise<{ published: number; lastReleaseAt: number }> {
    let published = 0;
    let lastReleaseAt = 0;
    for (let index = 0; !this.#stopped && (this.options.count === undefined || published < this.options.count); index++) {
      const sample = SAMPLE_POSTS[index % SAMPLE_POSTS.length]!;
      const now = Date.now();
      const args = withIdempotencyKey(buildPublishArgs(
        {
          streamId: sample.streamId,
          content: sample.content,
          contentType: sample.contentType,
          ...(sample.customTarget !== undefined ? { customTarget: sample.customTarget } : {}),
          ...(sample.releaseInMs !== undefined ? { releaseAt: new Date(now + sample.releaseInMs).toISOString() } : {}),
        },
        { contentType: sample.contentType },
        now,
      ));
      const outcome = await (await this.#publisherFor(sample.streamId)).publish(args);
      if (outcome.ok) {
        published += 1;
        if (sample.releaseInMs !== undefined) lastReleaseAt = now + sample.releaseInMs;
        this.options.onPublished?.(sample, outcome.post.id);
      } else {
        this.options.onError?.(`${outcome.code}: ${outcome.message}`);
      }
      if (this.options.count !== undefined && published >= this.options.count) break;
      await this.#sleep(this.options.intervalMs);
    }
    await Promise.all([...this.#publishers.values()].map((publisher) => publisher.close()));
    return { published, lastReleaseAt };
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  async #publisherFor(streamId: string): Promise<Publisher> {
    let publisher = this.#publishers.get(streamId);
    if (!publisher) {
      const stream = this.options.seed.streams.find((candidate) => candidate.id === streamId);
      if (!stream) throw new Error(`the demo seed has no stream ${streamId}`);
      publisher = new Publisher({ endpoint: this.options.endpoint, apiKey: stream.key });
      this.#publishers.set(streamId, publisher);
      await publisher.start();
    }
    return publisher;
  }

  #sleep(ms: number): Promise<void> {
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
