/**
 * The parent side of a benchmark's client processes (bench/*-client.mjs, which
 * answer through bench/lib/worker.mjs): requests answered over IPC, messages
 * the process sends unasked, and a clean stop.
 */
import { fork } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** A forked client process; one request of each type may wait for its answer at a time. */
export class ClientProcess {
  #child;
  #label;
  #waiting = new Map();
  #events = new Map();

  /**
   * Forks `script` as process `index`, sharing this process's stdout and
   * stderr, with `advanced` serialization (typed arrays pass as they are)
   * unless `fork` (extra fork options) says otherwise. `name` starts its errors.
   */
  constructor(script, index, { name = 'subscriber process', fork: forkOptions = {} } = {}) {
    this.index = index;
    this.#label = `${name} ${index}`;
    this.#child = fork(script, [], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      ...forkOptions,
    });
    this.pid = this.#child.pid;
    this.exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.once('exit', (code, signal) => this.#rejectAll(`${this.#label} exited (${code ?? signal})`));
    this.#child.on('error', (error) => this.#rejectAll(`${this.#label}: ${error.message}`));
    this.#child.on('message', (message) => {
      if (message.type === 'error') {
        const key = `${message.request}:ok`;
        const waiter = this.#waiting.get(key);
        this.#waiting.delete(key);
        waiter?.reject(new Error(`${this.#label}: ${message.message}`));
        return;
      }
      const waiter = this.#waiting.get(message.type);
      if (waiter) {
        this.#waiting.delete(message.type);
        waiter.resolve(message);
        return;
      }
      this.#events.get(message.type)?.(message, this);
    });
  }

  #rejectAll(why) {
    for (const waiter of this.#waiting.values()) waiter.reject(new Error(why));
    this.#waiting.clear();
  }

  /** Sends a request and resolves with the message of type `answer` (rejects on an `error` about it). */
  request(message, answer = `${message.type}:ok`) {
    if (!this.#child.connected) return Promise.reject(new Error(`${this.#label} is gone`));
    return new Promise((resolve, reject) => {
      this.#waiting.set(answer, { resolve, reject });
      this.#child.send(message);
    });
  }

  /** Sends a message that is not answered. */
  send(message) {
    this.#child.send(message);
  }

  /** Calls `handler(message, this)` for each message of `type` that answers no request (one handler per type). */
  on(type, handler) {
    this.#events.set(type, handler);
  }

  /**
   * Has the process close its clients (`close`) and exit (closing the IPC
   * channel does that); kills it when it has not exited 5 s later.
   */
  async close() {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const timeout = sleep(5_000, 'timeout', { ref: false });
    const exited = this.request({ type: 'close' })
      .catch(() => undefined)
      .then(() => {
        if (this.#child.connected) this.#child.disconnect();
        return this.exited;
      });
    if ((await Promise.race([exited, timeout])) === 'timeout') {
      this.#child.kill('SIGKILL');
      await this.exited;
    }
  }
}
