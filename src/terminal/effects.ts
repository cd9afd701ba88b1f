import { execFile } from 'node:child_process';
import { safeLine } from '../render/text.js';

const BEL = '\u0007';
const MAX_NOTIFICATION = 200;

/** The shortest time between two bells. */
export const BELL_GAP_MS = 1000;

/**
 * The terminal bell (tmux, screen and most terminals flag or flash it), at most once a
 * second: a burst of matching posts rings once, and once more a second later when more
 * came meanwhile, not once per post.
 */
export class Bell {
  readonly #write: (data: string) => void;
  readonly #now: () => number;
  #lastMs = Number.NEGATIVE_INFINITY;
  #later: NodeJS.Timeout | undefined;

  constructor(write: (data: string) => void, now: () => number = Date.now) {
    this.#write = write;
    this.#now = now;
  }

  ring(): void {
    if (this.#later !== undefined) return;
    const wait = this.#lastMs + BELL_GAP_MS - this.#now();
    if (wait <= 0) return this.#sound();
    this.#later = setTimeout(() => {
      this.#later = undefined;
      this.#sound();
    }, wait);
  }

  #sound(): void {
    this.#lastMs = this.#now();
    this.#write(BEL);
  }

  stop(): void {
    clearTimeout(this.#later);
    this.#later = undefined;
  }
}

/**
 * A desktop notification: OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty) and OSC 777
 * (foot, VTE, WezTerm); a terminal ignores the one it does not know. Every other terminal
 * has the bell, rung apart (`Bell`). The text is one safe line: no BEL or ESC can end the
 * sequence early.
 */
export function notification(title: string, body: string): string {
  const clean = (text: string) => safeLine(text).replace(/;/g, ',').slice(0, MAX_NOTIFICATION);
  return `\u001B]9;${clean(`${title}: ${body}`)}${BEL}\u001B]777;notify;${clean(title)};${clean(body)}${BEL}`;
}

/** OSC 52: the terminal puts the text on the system clipboard (over SSH too). */
export function clipboard(text: string): string {
  return `\u001B]52;c;${Buffer.from(text, 'utf8').toString('base64')}${BEL}`;
}

/** The system's opener for a URL, run without a shell. */
export function systemOpener(platform: NodeJS.Platform = process.platform): { file: string; args: string[] } {
  if (platform === 'darwin') return { file: 'open', args: [] };
  // `start` is a cmd.exe built-in, which would mean a shell: explorer opens a URL with the default browser.
  if (platform === 'win32') return { file: 'explorer.exe', args: [] };
  return { file: 'xdg-open', args: [] };
}

/**
 * Opens a web address with the system opener. Resolves with false when it could not be
 * run (none installed): the caller shows the address instead. An opener that ran and
 * failed has said why itself. Its output is discarded: it would draw over the screen.
 */
export function openUrl(url: string, opener = systemOpener()): Promise<boolean> {
  return new Promise((resolve) => {
    const child = execFile(opener.file, [...opener.args, url], { windowsHide: true }, (error) => {
      // A spawn failure has a string code (ENOENT, EACCES); an exit status is a number.
      resolve(error === null || typeof (error as { code?: unknown }).code === 'number');
    });
    child.stdin?.end();
  });
}
