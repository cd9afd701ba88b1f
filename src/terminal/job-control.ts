// The terminal's job control: Ctrl-Z stops the whole job and SIGCONT gives the screen back, and
// a hang-up ends the view. These are signals of this very process and its process group, which
// no context can stand in for, so this file reads process.* (as the entry, main.ts, does).

export interface JobHooks {
  /** Before the job stops: give the terminal back. */
  stopping(): void;
  /** After SIGCONT, or when the stop was discarded: take the terminal again. */
  resumed(): void;
  /** The stop was discarded: no shell with job control started this process. */
  notStopped(): void;
  /** SIGHUP: the terminal went away. */
  hangUp(): void;
}

export interface JobControl {
  /** Ctrl-Z: the terminal given back, the job stopped as the terminal's own Ctrl-Z stops it; back on SIGCONT. */
  suspend(): void;
  /** Stops listening. */
  close(): void;
}

export function jobControl(hooks: JobHooks): JobControl {
  const hangUp = () => hooks.hangUp();
  const suspend = () => {
    let continued = false;
    const takeBack = () => {
      continued = true;
      process.on('SIGTSTP', suspend);
      hooks.resumed();
    };
    hooks.stopping();
    process.once('SIGCONT', takeBack);
    // Without a listener of ours, SIGTSTP does what it does by default: it stops the process.
    process.off('SIGTSTP', suspend);
    // The whole job (a wrapper such as npx too): the process is stopped before `kill` returns.
    process.kill(0, 'SIGTSTP');
    // SIGCONT is told before anything set now runs. None: the stop was discarded, as for a job
    // that no shell with job control started (its process group is orphaned).
    setImmediate(() => {
      if (continued) return;
      process.off('SIGCONT', takeBack);
      takeBack();
      hooks.notStopped();
    });
  };
  // A stop from outside (`kill -TSTP`, a job control of another kind) gives the terminal back first, as Ctrl-Z does.
  process.on('SIGTSTP', suspend);
  process.on('SIGHUP', hangUp);
  return {
    suspend,
    close() {
      process.off('SIGTSTP', suspend);
      process.off('SIGHUP', hangUp);
    },
  };
}
