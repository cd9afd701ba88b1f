// `serve --workers`: how the workers' admin endpoints reach every worker. A worker puts a
// request to the primary, which puts it to every worker that is listening (the asker too)
// and hands the answers back: the workers never talk to each other.
import type { Worker } from 'node:cluster';
import type { PeerAnswer, PeerLink, PeerRequest } from '../api/serve-support.js';
import { ProtocolError } from '../protocol/errors.js';

type Message =
  | { type: 'peer-ask'; ask: number; request: PeerRequest }
  | { type: 'peer-request'; ask: number; request: PeerRequest }
  | { type: 'peer-answer'; ask: number; answer: PeerAnswer }
  | { type: 'peer-answers'; ask: number; answers: PeerAnswer[] };

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
  const waiting = new Map<number, (answers: PeerAnswer[]) => void>();
  let handler: ((request: PeerRequest) => Promise<unknown>) | undefined;
  process.on('message', (message: unknown) => {
    if (isMessage(message, 'peer-answers')) {
      waiting.get(message.ask)?.(message.answers);
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
  answers: PeerAnswer[];
  waiting: Set<Worker>;
}

/** In the primary: puts each worker's request to every listening worker and returns the answers. */
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
      const pending: Pending = { from: worker, ask: message.ask, answers: [], waiting: new Set(this.#listening) };
      this.#pending.set(ask, pending);
      const request: Message = { type: 'peer-request', ask, request: message.request };
      for (const each of pending.waiting) each.send(request);
      this.#finishIfDone(ask, pending);
      return true;
    }
    if (isMessage(message, 'peer-answer')) {
      const pending = this.#pending.get(message.ask);
      if (pending?.waiting.delete(worker)) {
        pending.answers.push(message.answer);
        this.#finishIfDone(message.ask, pending);
      }
      return true;
    }
    return false;
  }

  #finishIfDone(ask: number, pending: Pending): void {
    if (pending.waiting.size > 0) return;
    this.#pending.delete(ask);
    const reply: Message = { type: 'peer-answers', ask: pending.ask, answers: pending.answers };
    if (pending.from.isConnected()) pending.from.send(reply);
  }
}
