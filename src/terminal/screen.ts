import { writeSync } from 'node:fs';

// Alternate screen on, cleared, cursor hidden; restored: cursor shown, mouse and
// bracketed-paste reporting off (in case anything turned them on), SGR reset, alternate screen off.
const ENTER = '\u001B[?1049h\u001B[H\u001B[2J\u001B[?25l';
const LEAVE = '\u001B[?1000l\u001B[?1002l\u001B[?1006l\u001B[?2004l\u001B[0m\u001B[?25h\u001B[?1049l';

export interface Screen {
  /** Gives the terminal back as it was; safe to call more than once, and from an exit handler. */
  restore(): void;
  /** Gives the terminal back for a while (Ctrl-Z): the shell gets its screen and its line editing. */
  suspend(): void;
  /** Takes the screen again after `suspend`; the caller draws the whole frame. */
  resume(): void;
}

/**
 * Takes the alternate screen and makes sure every way out gives it back: the normal end
 * calls `restore`, and the process's exit (a signal, an uncaught error) does it too, with a
 * synchronous write, the only kind an exit handler can make.
 */
export function enterScreen(stdout: NodeJS.WriteStream, stdin: NodeJS.ReadStream): Screen {
  let restored = false;
  let suspended = false;
  const fd = (stdout as NodeJS.WriteStream & { fd?: number }).fd ?? 1;
  const setRaw = (raw: boolean) => {
    try {
      if (stdin.isTTY) stdin.setRawMode(raw);
    } catch {
      // A terminal already gone cannot be put back.
    }
  };
  const leave = () => {
    setRaw(false);
    try {
      writeSync(fd, LEAVE);
    } catch {
      // Same: the terminal is gone (SIGHUP).
    }
  };
  const restore = () => {
    if (restored) return;
    restored = true;
    process.off('exit', restore);
    if (!suspended) leave();
  };
  // However this process ends, the terminal is given back.
  process.on('exit', restore);
  stdout.write(ENTER);
  setRaw(true);
  return {
    restore,
    suspend: () => {
      if (restored || suspended) return;
      suspended = true;
      // Written at once: the process stops right after, with nothing left to flush it.
      leave();
    },
    resume: () => {
      if (restored || !suspended) return;
      suspended = false;
      setRaw(true);
      stdout.write(ENTER);
    },
  };
}
