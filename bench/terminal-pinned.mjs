/**
 * bench/terminal-pinned — bench/terminal's keys and burst with the render path alone on a
 * core (`taskset`): the terminal and `less` on the last CPU, everything else (this process,
 * the server, the publisher, tmux, `tree`) on the others. The same flags as `terminal`.
 */
import { run as runTerminal } from './terminal.mjs';

export function run(options = {}) {
  return runTerminal({ ...options, pinned: true });
}
