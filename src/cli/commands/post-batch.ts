import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { checkReadable } from '../files.js';
import { prepareBatchLine, runBatch, type BatchResult } from '../batch.js';
import { localClockNotice, serviceClock } from '../release-at.js';
import { type PublishOptions, type PublishResult, StreamPostsError, type StreamPostsClient } from '../../index.js';
import {
  PUBLISH_FIELDS,
  commandFailure,
  commandFrame,
  outcomeOf,
  setFields,
  type PublishData,
  type PublishOutcome,
  type RateLimitWait,
} from '../../api/internal.js';
import { STREAMS_PATH } from '../../protocol/paths.js';
import { requireKey } from '../common.js';
import { withoutKey, wsWhere } from '../describe.js';
import { jsonLine } from '../../render/json.js';
import { EXIT, usageError } from '../exit.js';
import type { PostOptions } from '../post-options.js';
import { statusFor } from '../status.js';

/**
 * Lines go out in one write per turn of the event loop, not one system call each, and are
 * formatted then too: the replies of a turn put the next posts on the wire first, so the
 * service works on them while this process writes the results.
 */
class LineWriter {
  #pending: unknown[] = [];
  #scheduled = false;

  write(value: unknown): void {
    this.#pending.push(value);
    if (this.#pending.length >= 512) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    let text = '';
    for (const value of this.#pending) text += `${jsonLine(value)}\n`;
    process.stdout.write(text);
    this.#pending = [];
  }
}

function input(options: PostOptions): NodeJS.ReadableStream {
  return options.file !== undefined && options.file !== '-' ? createReadStream(options.file) : process.stdin;
}

/** `--batch --dry-run`: every line validated here as the service would, nothing sent. */
async function dryRun(options: PostOptions, out: LineWriter): Promise<number> {
  const [{ buildPublishArgs }, { ProtocolError }] = await Promise.all([
    import('../validate-post.js'),
    import('../../protocol/errors.js'),
  ]);
  const defaults = { streamId: options.stream, contentType: options.contentType };
  let failed = 0;
  let line = 0;
  for await (const text of createInterface({ input: input(options), crlfDelay: Number.POSITIVE_INFINITY })) {
    line += 1;
    if (text.trim() === '') continue;
    const prepared = prepareBatchLine(text, defaults, Date.now(), false);
    let result: BatchResult | { line: number; command: Record<string, unknown> };
    if (!prepared.ok) result = { line, error: prepared.error };
    else {
      try {
        result = { line, command: commandFrame(buildPublishArgs(prepared.data as Record<string, unknown>, defaults)) };
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        result = { line, error: { code: error.code, message: error.message } };
      }
    }
    if ('error' in result) failed += 1;
    out.write(result);
  }
  out.flush();
  return failed === 0 ? EXIT.ok : EXIT.usage;
}

/**
 * One line through the library. Only the command's fields are taken, unset ones dropped,
 * as the service reads them: a line must not set the library's own options (where the
 * key goes, how long to wait). What the library will not send is reported as the service
 * reports a bad field, in the line's place, and the rest of the batch goes on.
 */
function publishLine(
  publish: (options: PublishOptions) => Promise<PublishResult | StreamPostsError>,
  data: PublishData,
  timeoutMs: number,
  awaited: string,
): Promise<PublishOutcome> {
  const fields = setFields(data, PUBLISH_FIELDS) as unknown as PublishOptions;
  const refused = (error: unknown): PublishOutcome => {
    if (error instanceof TypeError || error instanceof RangeError)
      return { ok: false, code: 'invalid-argument', message: error.message };
    const failure = commandFailure(
      error,
      timeoutMs,
      awaited,
      (key) => `give the line "idempotencyKey": "${key}" when it is sent again`,
    );
    // A post whose ack never came is its line's outcome, with the key it went with; the rest go on.
    if (failure instanceof StreamPostsError && failure.idempotencyKey !== undefined) {
      const { code, message, idempotencyKey } = failure;
      return { ok: false, code, message, idempotencyKey };
    }
    throw failure;
  };
  let sent: Promise<PublishResult | StreamPostsError>;
  try {
    sent = publish(fields);
  } catch (error) {
    sent = Promise.reject(error);
  }
  return sent.then(outcomeOf, refused);
}

/** What a batch held back by the service's rate limit says on stderr (it would otherwise look stuck). */
export function rateLimitNotice(wait: RateLimitWait): string {
  const seconds = (wait.waitingMs / 1000).toFixed(1);
  const pace = `about ${Math.round(wait.answeredPerSecond)} posts/s`;
  return wait.stated !== undefined
    ? `the service limits the rate to ${wait.stated.perSecond} commands/s (bursts of ${wait.stated.burst}): posts go at that pace, ${pace}, held back for ${seconds}s so far`
    : `the service is limiting the rate (${wait.refusals} rate-limited replies): posts go one window at a time, ${pace}, held back for ${seconds}s so far`;
}

/**
 * `post --batch`: NDJSON lines published over one connection (or REST), with a
 * bounded window, one result line per input line in order; exit 0 when all
 * were published, 1 otherwise, 3 when the service could not be reached.
 */
export async function postBatch(options: PostOptions): Promise<number> {
  if (options.content !== undefined)
    throw usageError('--batch reads NDJSON from standard input (or --file); do not give content as an argument');
  if (options.releaseAt !== undefined || options.customTarget !== undefined || options.idempotencyKey !== undefined) {
    throw usageError('--batch takes releaseAt, customTarget and idempotencyKey from each line, not from flags');
  }
  if (options.file !== undefined && options.file !== '-') {
    await checkReadable(options.file, '--file');
  }
  const out = new LineWriter();
  if (options.dryRun) return dryRun(options, out);
  const apiKey = requireKey(options.settings);
  const status = await statusFor(options, true);
  const { endpoint } = options.settings;
  let client: StreamPostsClient | undefined;
  let send: (data: PublishData) => Promise<PublishOutcome>;
  // Relative release times count from the service's clock when it said it (`connected`
  // usually comes with the upgrade, before the first line is read), else this machine's.
  let now = Date.now;
  try {
    if (options.via === 'rest') {
      const { publishRestOrRefusal } = await import('../../api/internal.js');
      const rest = (fields: PublishOptions) =>
        publishRestOrRefusal(options.settings.endpoints, { ...fields, apiKey, timeoutMs: options.timeoutMs });
      send = (data) =>
        publishLine(
          rest,
          data,
          options.timeoutMs,
          withoutKey(options.settings, `a reply to POST ${endpoint.httpBase}${STREAMS_PATH}/${data.streamId}/post`),
        );
    } else {
      const { openPostClient } = await import('../publish-one.js');
      client = await openPostClient(options, apiKey, status, {
        awaitFirstWord: false,
        retryReplyTimeouts: false,
        onRateLimited: (wait) => {
          if (!options.quiet) status.warn(rateLimitNotice(wait));
        },
      });
      const connected = client;
      now = serviceClock(client.statedServerTime);
      const notice = localClockNotice(client.statedServerTime, 'a relative releaseAt');
      if (notice !== undefined) status.info(notice);
      // No wait of its own per post: a post held back by rate limits or a reconnect is resent
      // with its key until it is acknowledged; once sent, --timeout bounds its ack.
      const ws = (fields: PublishOptions) => {
        fields.timeoutMs = 0;
        return connected.publishOrRefusal(fields);
      };
      send = (data) =>
        publishLine(
          ws,
          data,
          options.timeoutMs,
          `ack (the reply to add-stream-post) from ${wsWhere(options.settings)}`,
        );
      status.connected(`connected; publishing with up to ${options.window} posts in flight`);
    }
    const summary = await runBatch({
      input: input(options),
      defaults: { streamId: options.stream, contentType: options.contentType },
      // Requests in flight together over REST go on connections of their own, and a 429 is
      // retried after a pause: only one at a time keeps the file's order.
      window: options.via === 'rest' ? 1 : options.window,
      send,
      now,
      onResult: (result) => out.write(result),
    });
    if (!options.quiet && (summary.failed > 0 || options.verbose)) {
      process.stderr.write(`stream-posts: ${summary.published} published, ${summary.failed} failed\n`);
    }
    if (summary.timedOut > 0) return EXIT.unreachable;
    return summary.failed === 0 ? EXIT.ok : EXIT.failed;
  } finally {
    // Results already settled stand, whatever ended the batch.
    out.flush();
    status.stop();
    await client?.close();
  }
}
