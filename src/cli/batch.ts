import { createInterface } from 'node:readline';
import type { Post } from '../protocol/types.js';
import { generateIdempotencyKey, type PublishData, type PublishOutcome } from '../api/internal.js';
import { isPlainObject } from '../protocol/objects.js';
import { resolveReleaseAt, type PublishDefaults } from './release-at.js';

export type BatchResult =
  | { line: number; post: Post; duplicate: boolean }
  /** `idempotencyKey`: a line whose ack never came (code `timeout`) may have been published with it. */
  | { line: number; error: { code: string; message: string; idempotencyKey?: string } };

export interface BatchOptions {
  /** NDJSON, one add-stream-post data object per line. */
  input: NodeJS.ReadableStream;
  defaults: PublishDefaults;
  /** Most posts sent and not yet acknowledged. */
  window: number;
  send(data: PublishData): Promise<PublishOutcome>;
  /** Called once per non-blank input line, in input order; `line` is the line's number in the input. */
  onResult(result: BatchResult): void;
  now?: () => number;
}

export interface BatchSummary {
  published: number;
  failed: number;
  /** Lines whose ack never came (of those failed). */
  timedOut: number;
}

/**
 * Turns one NDJSON line into command data: defaults filled in, a relative
 * release time made absolute, an idempotency key added. Validation is the
 * service's (it answers a bad post with an error that names the field), so the
 * pipeline does no second, slower pass; `--dry-run` validates locally instead.
 */
export type PreparedLine = { ok: true; data: PublishData } | { ok: false; error: { code: string; message: string } };

export function prepareBatchLine(
  text: string,
  defaults: PublishDefaults,
  now: number,
  generateKey = true,
): PreparedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: { code: 'bad-json', message: `not valid JSON: ${(error as Error).message}` } };
  }
  if (!isPlainObject(value))
    return {
      ok: false,
      error: { code: 'invalid-argument', message: 'each line must be a JSON object of add-stream-post arguments' },
    };
  const streamId = value['streamId'] ?? defaults.streamId;
  if (typeof streamId !== 'string') {
    return {
      ok: false,
      error: {
        code: 'invalid-argument',
        message: 'streamId is required (in the line, or --stream) and must be a string',
      },
    };
  }
  // The parsed line is this function's own: filled in where it is, not copied.
  const data = value as PublishData;
  data['streamId'] = streamId;
  data['contentType'] ??= defaults.contentType;
  if (typeof data['releaseAt'] === 'string') data['releaseAt'] = resolveReleaseAt(data['releaseAt'], now);
  if (generateKey) data['idempotencyKey'] ??= generateIdempotencyKey();
  return { ok: true, data };
}

function outcomeError(outcome: PublishOutcome & { ok: false }): Extract<BatchResult, { error: unknown }>['error'] {
  const { code, message, idempotencyKey } = outcome;
  return idempotencyKey === undefined ? { code, message } : { code, message, idempotencyKey };
}

/**
 * Publishes NDJSON lines with at most `window` posts unacknowledged and
 * reports one result per line in input order, however the replies interleave.
 * A bad line is reported and the rest still go. Input is read only as fast as
 * posts are acknowledged. Rejects (with what `send` rejected with) when the
 * connection is lost for good; results already reported stand.
 */
export function runBatch(options: BatchOptions): Promise<BatchSummary> {
  if (!Number.isInteger(options.window) || options.window < 1)
    throw new RangeError(`window must be a positive integer, got ${options.window}`);
  const now = options.now ?? Date.now;
  const summary: BatchSummary = { published: 0, failed: 0, timedOut: 0 };
  const waiting: { line: number; seq: number; data: PublishData }[] = [];
  const finished = new Map<number, BatchResult>();
  let lineNumber = 0;
  let nextSeq = 0;
  let nextToReport = 0;
  let active = 0;
  let inputEnded = false;
  let paused = false;
  let fatal: unknown;
  const reader = createInterface({ input: options.input, crlfDelay: Number.POSITIVE_INFINITY });

  return new Promise((resolve, reject) => {
    const settle = (seq: number, result: BatchResult): void => {
      if (!('error' in result)) summary.published += 1;
      else {
        summary.failed += 1;
        if (result.error.code === 'timeout') summary.timedOut += 1;
      }
      finished.set(seq, result);
      for (let next = finished.get(nextToReport); next !== undefined; next = finished.get(nextToReport)) {
        finished.delete(nextToReport);
        nextToReport += 1;
        options.onResult(next);
      }
    };

    const finishIfDone = (): void => {
      if (active > 0) return;
      if (fatal !== undefined) reject(fatal);
      else if (inputEnded && waiting.length === 0) resolve(summary);
    };

    /** Sends what the window allows. */
    const fill = (): void => {
      while (fatal === undefined && active < options.window && waiting.length > 0) {
        const { line, seq, data } = waiting.shift()!;
        active += 1;
        options.send(data).then(
          (outcome) => {
            active -= 1;
            // The next post goes before this one's result is reported: the service is kept busy.
            fill();
            settle(
              seq,
              outcome.ok
                ? // A duplicate ack for a post this run resent is the post it published itself.
                  { line, post: outcome.post, duplicate: outcome.duplicate && outcome.attempts <= 1 }
                : { line, error: outcomeError(outcome) },
            );
            pump();
          },
          (error: unknown) => {
            active -= 1;
            fatal ??= error;
            reader.close();
            finishIfDone();
          },
        );
      }
    };

    const pump = (): void => {
      fill();
      if (paused && waiting.length < options.window) {
        paused = false;
        reader.resume();
      }
      finishIfDone();
    };

    reader.on('line', (text) => {
      lineNumber += 1;
      if (fatal !== undefined || text.trim() === '') return;
      const seq = nextSeq++;
      const prepared = prepareBatchLine(text, options.defaults, now());
      if (!prepared.ok) {
        settle(seq, { line: lineNumber, error: prepared.error });
        return;
      }
      waiting.push({ line: lineNumber, seq, data: prepared.data });
      if (!paused && waiting.length >= options.window * 4) {
        paused = true;
        reader.pause();
      }
      pump();
    });
    reader.on('close', () => {
      inputEnded = true;
      finishIfDone();
    });
    options.input.on('error', (error) => {
      fatal ??= error;
      reader.close();
    });
  });
}
