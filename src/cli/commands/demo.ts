import { DemoPublisher } from '../../demo/publisher.js';
import { startServer, type StreamPostsServer } from '../../index.js';
import {
  DEFAULT_TIMEOUT_MS,
  LIBRARY_WORDS as LIBRARY_URL_WORDS,
  serviceEndpoints,
  DEMO_SEED,
} from '../../api/internal.js';
import type { OutputOptions } from '../common.js';
import { invokedAs } from '../invocation.js';
import { commandLines } from '../../render/command-line.js';
import { wrapToWidth } from '../../render/wrap.js';
import { listen } from './listen.js';
import { statusFor } from '../status.js';

export interface DemoOptions extends OutputOptions {
  port: number;
  count: number | undefined;
  durationMs: number | undefined;
  intervalMs: number;
  view: 'tree' | 'listen';
  /** The full-screen `terminal` instead of the printed view. */
  terminal?: boolean;
}

const VIEWER = DEMO_SEED.users.find((user) => user.id === 'alice')!;
// Deliveries and the last release reach the view within this after the last publish.
const SETTLE_MS = 750;

async function startDemoServer(port: number): Promise<StreamPostsServer> {
  try {
    // The library's defaults are the demo's: the demo seed, silent, on 127.0.0.1.
    return await startServer({ port });
  } catch (error) {
    // The default port is taken (a `serve` already running, say): any free port will do.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && port !== 0) return startDemoServer(0);
    throw error;
  }
}

/** `demo`: serve with the demo seed, a publisher of sample posts, and the tree view, in one process. */
export async function demo(options: DemoOptions): Promise<number> {
  const server = await startDemoServer(options.port);
  const status = await statusFor(options);
  const endpoint = serviceEndpoints(server.url, LIBRARY_URL_WORDS)[0]!;
  if (!options.quiet) {
    // On a terminal, lines break between words: the terminal itself would break a URL anywhere.
    const width = process.stderr.isTTY && process.stderr.columns > 0 ? process.stderr.columns : undefined;
    const intro = `demo: serve on ${server.url}, publishing sample posts every ${options.intervalMs / 1000}s; the view below is ${VIEWER.name}'s (${options.view}).`;
    process.stderr.write(
      [
        width === undefined ? intro : wrapToWidth(intro, width),
        '      In another terminal, the same posts as bob sees them:',
        commandLines(
          ['STREAM_POSTS_API_KEY=sp_demo_reader_bob', invokedAs(), 'listen', '--url', server.url],
          '        ',
          width,
        ),
        options.terminal ? '' : `      Full screen, with search, filters and keys: ${invokedAs()} demo --terminal`,
        options.count === undefined && options.durationMs === undefined ? '      Ctrl-C to stop.' : '',
        '',
      ].join('\n'),
    );
  }
  const stopView = new AbortController();
  const publisher = new DemoPublisher({
    endpoint,
    seed: DEMO_SEED,
    intervalMs: options.intervalMs,
    count: options.count,
    onError: (message) => status.warn(`demo publisher: ${message}`),
  });
  const stopAll = () => {
    publisher.stop();
    stopView.abort();
  };
  const durationTimer = options.durationMs !== undefined ? setTimeout(stopAll, options.durationMs) : undefined;
  // `on`, not `once`: while a listener of ours is registered, the spinner's exit hook
  // leaves Ctrl-C to us instead of re-raising it (which would end the demo with 130).
  process.on('SIGINT', stopAll);
  process.on('SIGTERM', stopAll);
  let startPublishing!: () => void;
  const subscribed = new Promise<void>((resolve) => {
    startPublishing = resolve;
  });
  const settings = { endpoint, endpoints: [endpoint], apiKey: VIEWER.readerKey, profile: undefined };
  try {
    const view = options.terminal
      ? (await import('./terminal.js')).terminal({
          ...options,
          json: false,
          settings,
          authQuery: false,
          timeoutMs: DEFAULT_TIMEOUT_MS,
          streams: undefined,
          last: 20,
          match: undefined,
          utc: false,
          buffer: 5000,
          reconnect: true,
          alerts: [],
          signal: stopView.signal,
          onSubscribed: () => startPublishing(),
        })
      : listen({
          ...options,
          settings,
          authQuery: false,
          timeoutMs: DEFAULT_TIMEOUT_MS,
          command: options.view === 'tree' ? 'on-stream-post-tree' : 'on-stream-post',
          streams: undefined,
          last: 0,
          count: undefined,
          idleTimeoutMs: undefined,
          match: undefined,
          bell: false,
          reconnect: true,
          signal: stopView.signal,
          status,
          // The publisher starts once the view is subscribed, so the view misses nothing.
          onSubscribed: () => startPublishing(),
        });
    const published = subscribed
      .then(() => publisher.run())
      .then(async ({ lastReleaseAt }) => {
        // With --count, let the view show the last posts and the pending release before ending.
        if (options.count !== undefined) {
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastReleaseAt - Date.now()) + SETTLE_MS));
          stopView.abort();
        }
      });
    const code = await view;
    // A view that ended before subscribing (an error) must not leave the publisher waiting.
    publisher.stop();
    startPublishing();
    await published;
    return code;
  } finally {
    clearTimeout(durationTimer);
    process.off('SIGINT', stopAll);
    process.off('SIGTERM', stopAll);
    await server.close();
  }
}
