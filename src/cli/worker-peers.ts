// `serve --workers`: how the workers' admin endpoints reach every worker. A worker puts a
// request to the primary, which puts it to every worker that is listening (the asker too)
// and hands the answers back: the workers never talk to each other.
import type { Worker } from 'node:cluster';
import type { PeerAnswer, PeerAnswers, PeerLink, PeerRequest } from '../api/internal.js';
import type { WorkerAnswered } from '../protocol/admin.js';
import { ProtocolError } from '../protocol/errors.js';

/** How long the primary waits for the workers' answers: one stopped or dying must not hang the request. */
const PEER_DEADLINE_MS = 2_000;

type Message =
  | { type: 'peer-ask'; ask: number; request: PeerRequest }
  | { type: 'peer-request'; ask: number; request: PeerRequest }
  | { type: 'peer-answer'; ask: number; answer: PeerAnswer }
  | ({ type: 'peer-answers'; ask: number } & PeerAnswers);

/** A worker as admin replies name it: the prefix of its connection ids (`w2`). */
function workerName(worker: Pick<Worker, 'id'>): string {
  return `w${worker.id}`;
}

/**
 * Sends to a worker whose IPC channel is still open; a send that fails (the worker died
 * meanwhile: EPIPE, ERR_IPC_CHANNEL_CLOSED) is the worker's `exit` to come, not an error of
 * the primary's.
 */
function sendToWorker(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message, () => {});
}

function isMessage<T extends Message['type']>(message: unknown, type: T): message is Extract<Message, { type: T }> {
  return typeof message === 'object' && message !== null && (message as Message).type === type;
}

async function answerOf(
  handler: ((request: PeerRequest) => Promise<unknown>) | undefined,
  request: PeerRequest,
): Promise<PeerAnswer> {
  if (!handler) return { ok: false, code: 'unavailable', message: 'a worker is still starting' };
  try {
    return { ok: true, value: await handler(request) };
  } catch (error) {
    if (error instanceof ProtocolError) return { ok: false, code: error.code, message: error.message };
    return { ok: false, code: 'internal', message: 'a worker failed to answer' };
  }
}

/** In a worker: its link to the others, through the primary. Made before the server starts. */
export function workerLink(): PeerLink {
  let nextAsk = 1;
  const waiting = new Map<number, (answers: PeerAnswers) => void>();
  let handler: ((request: PeerRequest) => Promise<unknown>) | undefined;
  process.on('message', (message: unknown) => {
    if (isMessage(message, 'peer-answers')) {
      waiting.get(message.ask)?.({ answers: message.answers, workers: message.workers });
      waiting.delete(message.ask);
    } else if (isMessage(message, 'peer-request')) {
      void answerOf(handler, message.request).then((answer) => {
        const reply: Message = { type: 'peer-answer', ask: message.ask, answer };
        process.send?.(reply);
      });
    }
  });
  return {
    ask(request) {
      const ask = nextAsk++;
      return new Promise((resolve) => {
        waiting.set(ask, resolve);
        const message: Message = { type: 'peer-ask', ask, request };
        process.send?.(message);
      });
    },
    answer(given) {
      handler = given;
    },
  };
}

interface Pending {
  from: Worker;
  /** The asker's own number for the request. */
  ask: number;
  asked: Worker[];
  /** The workers still to answer; a worker gone before it answered leaves it too. */
  waiting: Set<Worker>;
  answers: Map<Worker, PeerAnswer>;
  deadline: NodeJS.Timeout;
}

/**
 * In the primary: puts each worker's request to every listening worker and returns the
 * answers given within PEER_DEADLINE_MS, naming the workers that gave none.
 */
export class PeerRouter {
  readonly #listening = new Set<Worker>();
  readonly #pending = new Map<number, Pending>();
  #nextAsk = 1;

  /** A worker that reported it is listening: it answers from now on. */
  listening(worker: Worker): void {
    this.#listening.add(worker);
  }

  /** A worker that has gone answers nothing more: what waited for it goes on without it. */
  gone(worker: Worker): void {
    this.#listening.delete(worker);
    for (const [ask, pending] of this.#pending) {
      pending.waiting.delete(worker);
      this.#finishIfDone(ask, pending);
    }
  }

  /** A message from a worker; false when it was not about peers. */
  message(worker: Worker, message: unknown): boolean {
    if (isMessage(message, 'peer-ask')) {
      const ask = this.#nextAsk++;
      const asked = [...this.#listening].filter((each) => each.isConnected());
      const pending: Pending = {
        from: worker,
        ask: message.ask,
        asked,
        answers: new Map(),
        waiting: new Set(asked),
        deadline: setTimeout(() => this.#finish(ask, pending), PEER_DEADLINE_MS),
      };
      this.#pending.set(ask, pending);
      for (const each of asked) sendToWorker(each, { type: 'peer-request', ask, request: message.request });
      this.#finishIfDone(ask, pending);
      return true;
    }
    if (isMessage(message, 'peer-answer')) {
      const pending = this.#pending.get(message.ask);
      if (pending?.waiting.delete(worker)) {
        pending.answers.set(worker, message.answer);
        this.#finishIfDone(message.ask, pending);
      }
      return true;
    }
    return false;
  }

  #finishIfDone(ask: number, pending: Pending): void {
    if (pending.waiting.size === 0) this.#finish(ask, pending);
  }

  #finish(ask: number, pending: Pending): void {
    clearTimeout(pending.deadline);
    this.#pending.delete(ask);
    // By worker number, whichever started listening first: one reply reads like the next.
    const workers: WorkerAnswered[] = [...pending.asked]
      .sort((a, b) => a.id - b.id)
      .map((each) => ({
        id: workerName(each),
        answered: pending.answers.has(each),
      }));
    const answers = [...pending.answers.values()];
    sendToWorker(pending.from, { type: 'peer-answers', ask: pending.ask, answers, workers });
  }
}
