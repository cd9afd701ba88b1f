import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { SubscriptionEvent } from '../index.js';
import { jsonLine } from '../render/json.js';
import { safeLine } from '../render/text.js';

/** Posts waiting for their command; past this, reading from the service pauses until one has run. */
const QUEUE_LIMIT = 1000;

interface Job {
  input: string;
  env: NodeJS.ProcessEnv;
  postId: string;
}

export interface ExecHookOptions {
  /** Kept out of the command's environment, under whatever name it was found. */
  apiKey: string | undefined;
  /** Says that a command failed (a warning line on stderr). */
  report: (text: string) => void;
  /** Where the command's output goes: the terminal (default), or nowhere when the screen is not ours to write on. */
  output?: 'inherit' | 'ignore';
}

// Items of other feeds of the tree family may carry any `time`.
const isoOf = (time: unknown): string =>
  typeof time === 'number' && Math.abs(time) <= 8.64e15 ? new Date(time).toISOString() : '';

/** A shell reports a command killed by signal N as exit code 128 + N. */
function diedOf(code: number | null): string {
  const signal =
    code !== null && code > 128
      ? Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0]
      : undefined;
  return signal === undefined ? '' : ` (killed by ${signal})`;
}

/** `STREAM_POSTS_*` for one post: every value one line of printable text, empty when the post has none. */
export function postVariables(event: SubscriptionEvent): Record<string, string> {
  const fields =
    event.format === 'post'
      ? {
          POST_ID: event.post.id,
          STREAM_ID: event.post.streamId,
          STREAM_NAME: event.post.streamName,
          HIDDEN: String(event.post.hidden),
          CREATED_AT: event.post.createdAt,
          RELEASE_AT: event.post.releaseAt ?? '',
          CONTENT_TYPE: event.post.contentType,
          CUSTOM_TARGET: event.post.customTarget ?? '',
        }
      : {
          POST_ID: event.item._id,
          STREAM_ID: event.item.streamId,
          STREAM_NAME: event.item.title,
          HIDDEN: String(event.item.hidden === true),
          CREATED_AT: isoOf(event.item.time),
          RELEASE_AT: '',
          CONTENT_TYPE: event.item.contentType,
          CUSTOM_TARGET: '',
        };
  const variables: Record<string, string> = { STREAM_POSTS_EVENT: event.type, STREAM_POSTS_FORMAT: event.format };
  for (const [name, value] of Object.entries(fields))
    variables[`STREAM_POSTS_${name}`] = typeof value === 'string' ? safeLine(value) : '';
  return variables;
}

/**
 * `listen --exec` / `tree --exec`: a shell command run for each post, one at a time and in
 * order, with the post's `--json` line on stdin and `STREAM_POSTS_*` variables. The feed
 * keeps being read while a command runs; a command that fails is reported and the next
 * post's runs all the same.
 */
export class ExecHook {
  readonly #command: string;
  readonly #options: ExecHookOptions;
  readonly #baseEnv: NodeJS.ProcessEnv;
  readonly #queue: Job[] = [];
  #running: Promise<void> | undefined;
  #roomWaiters: Array<() => void> = [];

  constructor(command: string, options: ExecHookOptions) {
    this.#command = command;
    this.#options = options;
    const env = { ...process.env };
    const { apiKey } = options;
    for (const [name, value] of Object.entries(env)) {
      if (name === 'STREAM_POSTS_API_KEY' || (apiKey !== undefined && value?.includes(apiKey))) delete env[name];
    }
    this.#baseEnv = env;
  }

  /** Queues the command for this post; false when the queue is full (wait for `room`). */
  push(event: SubscriptionEvent, frame: unknown): boolean {
    const variables = postVariables(event);
    this.#queue.push({
      input: `${jsonLine(frame)}\n`,
      env: { ...this.#baseEnv, ...variables },
      postId: variables['STREAM_POSTS_POST_ID'] ?? '',
    });
    this.#running ??= this.#drain();
    return this.#queue.length < QUEUE_LIMIT;
  }

  /** Resolves once the queue has room again (or the signal aborts). */
  room(signal: AbortSignal): Promise<void> {
    if (this.#queue.length < QUEUE_LIMIT || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#roomWaiters.push(done);
      signal.addEventListener('abort', done);
    });
  }

  /** Waits for the queued commands to have run; `dropQueued` (Ctrl-C): only for the one running. */
  async close(dropQueued: boolean): Promise<void> {
    if (dropQueued) this.#queue.length = 0;
    await this.#running;
  }

  async #drain(): Promise<void> {
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) {
      if (this.#queue.length < QUEUE_LIMIT) {
        for (const wake of this.#roomWaiters.splice(0)) wake();
      }
      await this.#run(job);
    }
    this.#running = undefined;
  }

  #run(job: Job): Promise<void> {
    const forPost = job.postId === '' ? '' : ` (post ${job.postId})`;
    return new Promise((resolve) => {
      let settled = false;
      const settle = (failure?: string) => {
        if (settled) return;
        settled = true;
        if (failure !== undefined) this.#options.report(`--exec: ${failure}${forPost}; going on with the next post`);
        resolve();
      };
      const output = this.#options.output ?? 'inherit';
      const child = spawn(this.#command, { shell: true, stdio: ['pipe', output, output], env: job.env });
      // A command that does not read its input ends the pipe early: that is its business.
      child.stdin?.on('error', () => {});
      child.stdin?.end(job.input);
      child.on('error', (error) => settle(`cannot run the command: ${error.message}`));
      child.on('close', (code, signal) => {
        if (signal !== null) settle(`the command was killed by ${signal}`);
        else if (code !== 0) settle(`the command exited with code ${code}${diedOf(code)}`);
        else settle();
      });
    });
  }
}
