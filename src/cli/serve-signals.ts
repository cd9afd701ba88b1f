// serve's stops, and the --exec command they go to. Starting that command and signalling its
// process group are this process's own doing, which is why this file reads process.* (the
// kill of a group by its negative id); the stops themselves come as the context's signal.
import { spawn } from 'node:child_process';
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

  readonly #stderr: NodeJS.WritableStream;

  /** `signal`: the context's, aborted with the name of the signal (SIGINT or SIGTERM). */
  constructor(signal: AbortSignal, stderr: NodeJS.WritableStream) {
    this.#stderr = stderr;
    this.stopped = new Promise((resolve) => {
      this.#stop = (signal: NodeJS.Signals) => {
        this.requested = true;
        if (this.#child) this.#child.kill(signal);
        else resolve(EXIT.ok);
      };
      // A second signal finds this one spent: the entry lets it do what it does by default.
      const onAbort = () => this.#stop(signal.reason === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
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
      this.#stderr.write(`stream-posts: cannot run the --exec command: ${error.message}\n`);
      return EXIT.failed;
    });
  }
}

/**
 * Starts serve's `--exec` command with `env` (the CLI's environment and serve's variables).
 * `ownGroup`: the command leads a process group that a stop signals as a whole, as Ctrl-C
 * does a terminal's (`--exit-after-scenario`: the shell running the command would not pass
 * the signal on). Off otherwise: a command outside the terminal's group cannot read from it.
 */
export function startExecChild(command: string, env: NodeJS.ProcessEnv, ownGroup = false): ExecChild {
  const child = spawn(command, { shell: true, stdio: 'inherit', env, detached: ownGroup });
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== null) resolve(code);
      else resolve(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  });
  // A signal sent before the shell runs could meet this process's own handlers in the new one.
  const spawned = new Promise<void>((resolve) => child.once('spawn', resolve));
  const kill = (signal: NodeJS.Signals) => {
    if (!ownGroup) return void child.kill(signal);
    void spawned.then(() => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // The group has already gone.
      }
    });
  };
  return { done, kill };
}
