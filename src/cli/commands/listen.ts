import type { StreamPostsClient, SubscriptionEvent } from '../../index.js';
import { openClient, StreamNames, commandFailure } from '../../api/internal.js';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import type { ServerEventName, SubscribeCommandName } from '../../protocol/types.js';
import { supportsHyperlinks } from '../../render/hyperlinks.js';
import { loadMarkdownRenderer } from '../../render/markdown.js';
import { formatPost } from '../../render/posts.js';
import type { StatusReporter } from '../../render/status.js';
import { jsonLine } from '../../render/json.js';
import { formatTreeItem } from '../../render/tree.js';
import { requireKey, type CommonOptions } from '../common.js';
import { describeSettings, wsWhere } from '../describe.js';
import { ExecHook } from '../exec-hook.js';
import { watchPipeReader } from '../reader-watch.js';
import { EXIT, usageError } from '../exit.js';
import { describeState, statusFor } from '../status.js';

export interface ListenOptions extends CommonOptions {
  command: SubscribeCommandName;
  streams: string[] | undefined;
  last: number;
  count: number | undefined;
  idleTimeoutMs: number | undefined;
  match: RegExp | undefined;
  bell: boolean;
  reconnect: boolean;
  /** Times in UTC (marked so) instead of local time. */
  utc?: boolean;
  /** Ends the command like Ctrl-C does (the demo stops its view this way). */
  signal?: AbortSignal;
  /** Called once the first subscription is acknowledged. */
  onSubscribed?: () => void;
  /** Replaces the status reporter (the demo shares one). */
  status?: StatusReporter;
  /** A shell command run for each post shown (exec-hook.ts). */
  exec?: string | undefined;
}

// Posts read ahead of a stdout that is not draining: past this, reading from the service
// pauses, and what is not read waits there, where its slow-consumer rule applies.
const READ_AHEAD = 16;

/** The text a `--match` pattern is tried against. */
function searchableText(event: SubscriptionEvent): string {
  if (event.format === 'post') return event.post.text ?? '';
  const item = event.item as unknown as Record<string, unknown>;
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

/** `--json`: the message as the protocol frames it; a release learnt from the replay after a reconnect is framed as the release it is. */
function frameOf(event: SubscriptionEvent): unknown {
  if (event.format === 'tree') return event.item;
  const name: ServerEventName = event.type === 'released' ? 'stream.post.released' : 'stream.post.created';
  return { event: name, data: event.post };
}

/** `listen` and `tree`: subscribe and print until Ctrl-C, --count or --idle-timeout. */
export async function listen(options: ListenOptions): Promise<number> {
  const apiKey = requireKey(options.settings);
  const { endpoint } = options.settings;
  if (endpoint.treeFeed && (options.command !== 'on-stream-post-tree' || options.streams !== undefined)) {
    throw usageError(
      'a tree feed address (…/graphql?format=tree) gives tree items of the streams named in its URL: use tree, and put streamIds in the URL',
    );
  }
  const out = process.stdout;
  const status = options.status ?? (await statusFor(options));
  // Formatted for a reader on a terminal, or wherever colour is forced; as sent in a pipe.
  // NO_COLOR and --no-color take the colour away, not the formatting.
  const formatted = options.color || out.isTTY === true;
  // A terminal that reports no size is taken as 100 columns wide.
  const width = out.columns > 0 ? out.columns : 100;
  const hyperlinks = options.color && supportsHyperlinks(out, process.env);
  const markdown =
    formatted && !options.json ? await loadMarkdownRenderer({ color: options.color, width, hyperlinks }) : undefined;
  const view = {
    color: options.color,
    hyperlinks,
    markdown,
    match: options.match,
    ...(formatted ? { width } : {}),
    utc: options.utc === true,
  };
  if (options.verbose) status.info(describeSettings(options.settings, options.authQuery));

  let shown = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let stopReason: string | undefined;
  let saidSlow = false;
  const stopping = new AbortController();

  function write(event: SubscriptionEvent): boolean {
    let text: string;
    if (options.json) {
      // Re-serialized, never the server's own text: one line, every character a terminal would act on escaped.
      text = `${jsonLine(frameOf(event))}\n`;
    } else {
      const block =
        event.format === 'post'
          ? formatPost(event.post, event.type, view)
          : formatTreeItem(event.item as unknown as Record<string, unknown>, view, event.type);
      text = `${block}\n\n`;
    }
    const written = out.write(text);
    if (options.bell) process.stderr.write('\u0007');
    return written;
  }

  // Not pulling the next post while stdout is behind is what pauses the reading (READ_AHEAD).
  function drained(): Promise<void> {
    if (!saidSlow) status.info('the output is not keeping up: reading from the service pauses until it drains');
    saidSlow = true;
    return new Promise((resolve) => {
      const done = () => {
        out.off('drain', done);
        stopping.signal.removeEventListener('abort', done);
        resolve();
      };
      out.on('drain', done);
      stopping.signal.addEventListener('abort', done);
    });
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
    stopping.abort();
  }

  const onSignal = () => stop('interrupted');
  // `on`, not `once`: the spinner's exit hook (signal-exit) re-raises a SIGINT
  // that finds no other listener, which would end a normal Ctrl-C with 130.
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  options.signal?.addEventListener('abort', onSignal);
  // `listen | head -3`: the reader went away, which is a normal end, seen as soon as it
  // happens (the watcher) or at the next write (EPIPE).
  out.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') stop('output closed');
  });
  const stopWatching = watchPipeReader(out.fd, () => stop('output closed'));
  const exec =
    options.exec === undefined
      ? undefined
      : new ExecHook(options.exec, { apiKey, report: (text) => status.warn(text) });
  // Posts from a service that names no stream (the hosted one) are shown under its name all the same.
  const names = new StreamNames(options.settings.endpoints, apiKey, options.timeoutMs);
  let client: StreamPostsClient | undefined;
  try {
    client = await openClient(
      options.settings.endpoints,
      {
        apiKey,
        authQuery: options.authQuery,
        reconnect: options.reconnect,
        timeoutMs: options.timeoutMs,
        onState: (state) => describeState(state, status),
        ...(options.trace === undefined ? {} : { onFrame: options.trace }),
      },
      { awaitFirstWord: false, retryReplyTimeouts: false },
    );
    const subscription = client.subscribe({
      format: options.command === 'on-stream-post-tree' ? 'tree' : 'post',
      ...(options.streams !== undefined ? { streamIds: options.streams } : {}),
      lastPosts: options.last,
      signal: stopping.signal,
      highWaterMark: READ_AHEAD,
      onSubscribed: (ack) => {
        // The tree feed never lists its streams: connecting there follows all of the key's.
        const none = endpoint.treeFeed ? 'the tree feed' : 'no streams yet';
        const streams = ack.streamIds.length > 0 ? ack.streamIds.join(', ') : none;
        // After a reconnect the replay asks for the most history there is, and shows only what was not shown yet.
        const asked = ack.reconnected
          ? `replaying lastPosts ${MAX_LAST_POSTS}, posts not shown yet only`
          : `lastPosts ${options.last}`;
        status.connected(
          `${ack.reconnected ? 'reconnected' : 'subscribed'}: ${streams}${options.verbose ? ` (${options.command}, ${asked})` : ''}`,
        );
        armIdle();
        if (!ack.reconnected) options.onSubscribed?.();
      },
    });
    for await (const received of subscription) {
      armIdle();
      const event: SubscriptionEvent =
        received.format === 'post' ? { ...received, post: await names.named(received.post) } : received;
      if (!matches(options.match, searchableText(event))) continue;
      const written = write(event);
      if (exec && !exec.push(event, frameOf(event))) await exec.room(stopping.signal);
      // `--last` shows the past; `--count` waits for what happens next.
      if (!event.history) shown += 1;
      if (options.count !== undefined && shown >= options.count) {
        stop(`${shown} post${shown === 1 ? '' : 's'} shown`);
        break;
      }
      if (!written) await drained();
    }
  } catch (error) {
    throw commandFailure(error, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  } finally {
    stopWatching();
    clearTimeout(idleTimer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    options.signal?.removeEventListener('abort', onSignal);
    await client?.close();
    await exec?.close(stopReason === 'interrupted');
    status.stop();
  }
  if (stopReason !== undefined && options.verbose) status.info(`stopped: ${stopReason}`);
  return EXIT.ok;
}
