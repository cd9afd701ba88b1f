import { EXIT } from './exit.js';

export interface ExecChild {
  done: Promise<number>;
  kill: (signal: NodeJS.Signals) => void;
}

/**
 * SIGINT and SIGTERM end `serve` normally (0); while the `--exec` command runs they go to
 * it instead, and its exit code is serve's. Installed before anything is printed: a
 * script that reads the listening line and signals at once must still get a clean stop.
 */
export class StopSignals {
  requested = false;
  readonly stopped: Promise<number>;
  #child: ExecChild | undefined;
  #stop!: (signal: NodeJS.Signals) => void;

  constructor() {
    this.stopped = new Promise((resolve) => {
      this.#stop = (signal: NodeJS.Signals) => {
        this.requested = true;
        if (this.#child) this.#child.kill(signal);
        else resolve(EXIT.ok);
      };
      process.once('SIGINT', () => this.#stop('SIGINT'));
      process.once('SIGTERM', () => this.#stop('SIGTERM'));
    });
  }

  /** Stops as a SIGTERM would (`--exit-after-scenario`): the `--exec` command gets it. */
  terminate(): void {
    this.#stop('SIGTERM');
  }

  /** The exit code: the `--exec` command's (started unless a stop came first), or 0 on a signal. */
  async wait(startExec: (() => ExecChild) | undefined): Promise<number> {
    if (startExec === undefined || this.requested) return this.stopped;
    this.#child = startExec();
    return this.#child.done.catch((error: Error) => {
      process.stderr.write(`stream-posts: cannot run the --exec command: ${error.message}\n`);
      return EXIT.failed;
    });
  }
}
