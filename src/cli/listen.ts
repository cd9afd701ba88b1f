import { describeSettings } from '../client/describe.js';
import { Subscription, type Delivery } from '../client/subscription.js';
import type { SubscribeCommandName } from '../protocol/types.js';
import { supportsHyperlinks } from '../render/hyperlinks.js';
import { loadMarkdownRenderer } from '../render/markdown.js';
import { formatPost } from '../render/posts.js';
import type { StatusReporter } from '../render/status.js';
import { formatTreeItem } from '../render/tree.js';
import { requireKey, type CommonOptions } from './common.js';
import { EXIT } from './exit.js';
import { describeState, statusFor } from './status.js';

export interface ListenOptions extends CommonOptions {
  command: SubscribeCommandName;
  streams: string[] | undefined;
  last: number;
  count: number | undefined;
  idleTimeoutMs: number | undefined;
  match: RegExp | undefined;
  bell: boolean;
  reconnect: boolean;
  /** Ends the command like Ctrl-C does (the demo stops its view this way). */
  signal?: AbortSignal;
  /** Called once the first subscription is acknowledged. */
  onSubscribed?: () => void;
  /** Replaces the status reporter (the demo shares one). */
  status?: StatusReporter;
}

/** The text a `--match` pattern is tried against. */
function searchableText(delivery: Delivery): string {
  if (delivery.format === 'post') return delivery.post.text ?? '';
  const item = delivery.item;
  return ['title', 'en', 'body', 'source', 'link', 'url']
    .map((field) => item[field])
    .filter((value): value is string => typeof value === 'string')
    .join('\n');
}

function matches(pattern: RegExp | undefined, text: string): boolean {
  if (!pattern) return true;
  pattern.lastIndex = 0;
  return pattern.test(text);
}

/** `listen` and `tree`: subscribe and print until Ctrl-C, --count or --idle-timeout. */
export async function listen(options: ListenOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const out = process.stdout;
  const status = options.status ?? (await statusFor(options));
  const width = Math.min(out.columns || 100, 120);
  const hyperlinks = options.color && supportsHyperlinks(out, process.env);
  const markdown = options.color ? await loadMarkdownRenderer({ color: true, width, hyperlinks }) : undefined;
  const view = {
    color: options.color,
    hyperlinks,
    markdown,
    match: options.match,
  };
  if (options.verbose) status.info(describeSettings(options.settings, options.authQuery));

  let shown = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let stopReason: string | undefined;
  const subscription = new Subscription(
    {
      endpoint: options.settings.endpoint,
      apiKey,
      authQuery: options.authQuery,
      reconnect: options.reconnect,
    },
    { command: options.command, streamIds: options.streams, lastPosts: options.last },
    {
      onState: (state) => describeState(state, status),
      onSubscribed: (ack) => {
        const streams = ack.streamIds.length > 0 ? ack.streamIds.join(', ') : 'no streams yet';
        status.connected(`${ack.reconnected ? 'reconnected' : 'subscribed'}: ${streams}${options.verbose ? ` (${options.command}, lastPosts ${ack.lastPosts})` : ''}`);
        armIdle();
        if (!ack.reconnected) options.onSubscribed?.();
      },
      onActivity: () => armIdle(),
      onDelivery: (delivery) => {
        // Frames read in the same chunk as the one that ended it still arrive: --count 1 is one.
        if (stopReason !== undefined) return;
        if (!matches(options.match, searchableText(delivery))) return;
        write(delivery);
        shown += 1;
        if (options.count !== undefined && shown >= options.count) stop(`${shown} post${shown === 1 ? '' : 's'} shown`);
      },
    },
  );

  function write(delivery: Delivery): void {
    let text: string;
    if (options.json) {
      text = `${delivery.raw}\n`;
    } else {
      const block = delivery.format === 'post' ? formatPost(delivery.post, delivery.kind, view) : formatTreeItem(delivery.item, view, delivery.kind);
      text = `${block}\n\n`;
    }
    out.write(text);
    if (options.bell) process.stderr.write('\u0007');
  }

  function armIdle(): void {
    if (options.idleTimeoutMs === undefined || stopReason !== undefined) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => stop(`nothing arrived for ${options.idleTimeoutMs} ms`), options.idleTimeoutMs);
  }

  function stop(reason: string): void {
    if (stopReason !== undefined) return;
    stopReason = reason;
    clearTimeout(idleTimer);
    void subscription.close();
  }

  const onSignal = () => stop('interrupted');
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  options.signal?.addEventListener('abort', onSignal);
  // `listen | head -3`: the reader went away, which is a normal end.
  out.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') stop('output closed');
  });
  try {
    await subscription.start();
  } finally {
    clearTimeout(idleTimer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    options.signal?.removeEventListener('abort', onSignal);
    status.stop();
  }
  if (stopReason !== undefined && options.verbose) status.info(`stopped: ${stopReason}`);
  return EXIT.ok;
}
