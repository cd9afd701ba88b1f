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

/** The multiplexer between this process and the terminal, if any: it must be asked to pass sequences on. */
export type Multiplexer = 'tmux' | 'screen' | undefined;

export function multiplexerOf(env: NodeJS.ProcessEnv): Multiplexer {
  if ((env['TMUX'] ?? '') !== '') return 'tmux';
  if ((env['STY'] ?? '') !== '') return 'screen';
  return undefined;
}

/**
 * A sequence for the terminal outside a multiplexer, wrapped in its DCS passthrough: tmux's
 * (`ESC P tmux; … ESC \`, each ESC inside doubled; it passes it on where `allow-passthrough`
 * is on) or screen's (`ESC P … ESC \`). tmux and screen drop OSC 52, 9 and 777 otherwise.
 */
export function passedThrough(sequence: string, multiplexer: Multiplexer): string {
  if (multiplexer === 'tmux') return `\u001BPtmux;${sequence.replaceAll('\u001B', '\u001B\u001B')}\u001B\\`;
  if (multiplexer === 'screen') return `\u001BP${sequence}\u001B\\`;
  return sequence;
}

/**
 * What the footer says once a clipboard sequence went out: the terminal never answers it,
 * so it was sent, not known to be copied; in a multiplexer, the settings it takes.
 */
export function sentWords(what: 'link' | 'text', multiplexer: Multiplexer): string {
  if (multiplexer === 'tmux')
    return `${what} sent to the terminal (tmux passes it on with set-clipboard on or allow-passthrough on)`;
  if (multiplexer === 'screen') return `${what} sent to the terminal through screen (OSC 52)`;
  return `${what} sent to the terminal's clipboard (OSC 52)`;
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
