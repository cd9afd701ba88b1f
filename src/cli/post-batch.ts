import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { checkReadable } from '../client/files.js';
import { prepareBatchLine, runBatch, type BatchResult } from '../client/batch.js';
import { commandFrame } from '../client/publish-args.js';
import { Publisher, type PublishData } from '../client/publisher.js';
import { publishRest } from '../client/rest.js';
import { requireKey } from './common.js';
import { EXIT, usageError } from './exit.js';
import type { PostOptions } from './post.js';
import { describeState, statusFor } from './status.js';

/** Lines go out in one write per turn of the event loop, not one system call each. */
class LineWriter {
  #pending: string[] = [];
  #scheduled = false;

  write(value: unknown): void {
    this.#pending.push(JSON.stringify(value));
    if (this.#pending.length >= 512) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    process.stdout.write(`${this.#pending.join('\n')}\n`);
    this.#pending = [];
  }
}

function input(options: PostOptions): NodeJS.ReadableStream {
  return options.file !== undefined && options.file !== '-' ? createReadStream(options.file) : process.stdin;
}

/** `--batch --dry-run`: every line validated here as the service would, nothing sent. */
async function dryRun(options: PostOptions, out: LineWriter): Promise<number> {
  const [{ buildPublishArgs }, { ProtocolError }] = await Promise.all([import('../client/validate-post.js'), import('../protocol/errors.js')]);
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
 * `post --batch`: NDJSON lines published over one connection (or REST), with a
 * bounded window, one result line per input line in order; exit 0 when all
 * were published, 1 otherwise, 3 when the service could not be reached.
 */
export async function postBatch(options: PostOptions): Promise<number> {
  if (options.content !== undefined) throw usageError('--batch reads NDJSON from standard input (or --file); do not give content as an argument');
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
  let publisher: Publisher | undefined;
  const send =
    options.via === 'rest'
      ? (data: PublishData) => publishRest(options.settings.endpoint, apiKey, data)
      : (data: PublishData) => publisher!.publish(data);
  try {
    if (options.via === 'ws') {
      publisher = new Publisher({ endpoint: options.settings.endpoint, apiKey, authQuery: options.authQuery }, (state) => describeState(state, status));
      await publisher.start();
      status.connected(`connected; publishing with up to ${options.window} posts in flight`);
    }
    const summary = await runBatch({
      input: input(options),
      defaults: { streamId: options.stream, contentType: options.contentType },
      window: options.window,
      send,
      onResult: (result) => out.write(result),
    });
    if (!options.quiet && (summary.failed > 0 || options.verbose)) {
      process.stderr.write(`stream-posts: ${summary.published} published, ${summary.failed} failed\n`);
    }
    return summary.failed === 0 ? EXIT.ok : EXIT.failed;
  } finally {
    // Results already settled stand, whatever ended the batch.
    out.flush();
    status.stop();
    await publisher?.close();
  }
}
